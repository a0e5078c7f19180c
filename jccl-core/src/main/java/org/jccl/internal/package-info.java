/** Internals shared by jccl's modules; not an API. */
package org.jccl.internal;
