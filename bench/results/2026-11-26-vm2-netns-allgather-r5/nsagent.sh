#!/bin/bash
# Open MPI launch agent (plm_rsh_agent): "nsagent.sh HOST CMD..." runs CMD in HOST's namespace, as ssh would.
host="$1"; shift
case "$host" in
  10.77.0.1) ns="jcb2203-h0" ;; 10.77.0.2) ns="jcb2203-h1" ;; *) echo "nsagent: unknown host $host" >&2; exit 1 ;;
esac
exec ip netns exec "$ns" /bin/sh -c "$*"
