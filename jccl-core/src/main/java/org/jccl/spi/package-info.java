/** Service interface backends implement to plug into {@link org.jccl.Jccl#init(org.jccl.Options)}. */
package org.jccl.spi;
