#!/usr/bin/env bash
# The fault tests under load (issue #21): one busy thread per core beside them, each class run N
# times in a fresh JVM; prints a pass count per class and keeps the log of every failed run.
#
#   bench/fault-load.sh [RUNS] [CLASS...]       (default: 20 runs of every fault test class)
#
# Builds jccl-core's tests into jccl-core/target-faults (does not touch target/). Logs of failed
# runs: bench/results/fault-load/ (ignored by git). docs/RELIABILITY.md records the outcome.
set -u
cd "$(dirname "$0")/.."
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
RUNS=${1:-20}
shift || true
CLASSES=("$@")
[ ${#CLASSES[@]} -gt 0 ] || CLASSES=(
  org.jccl.host.ProcessRanksTest
  org.jccl.host.TcpProcessRanksTest
  org.jccl.host.HeartbeatFailureTest
  org.jccl.host.HostEngineBehaviourTest
  org.jccl.host.TcpEngineBehaviourTest
  org.jccl.host.WithTimeoutTest
  org.jccl.bootstrap.HeartbeatProcessTest
  org.jccl.bootstrap.HeartbeatTest
)
mvn -B -q -o -Djccl.build=-faults -pl jccl-core -DskipTests test-compile >/dev/null || { echo "build failed"; exit 1; }
mvn -B -q -o -Djccl.build=-faults -pl jccl-core dependency:build-classpath -Dmdep.includeScope=test \
  -Dmdep.outputFile=target-faults/cp.txt >/dev/null || { echo "classpath failed"; exit 1; }
console=$(ls ~/.m2/repository/org/junit/platform/junit-platform-console-standalone/*/junit-platform-console-standalone-*.jar 2>/dev/null | tail -1)
if [ -z "$console" ]; then
  mvn -B -q dependency:get -Dartifact=org.junit.platform:junit-platform-console-standalone:6.1.3 >/dev/null
  console=$(ls ~/.m2/repository/org/junit/platform/junit-platform-console-standalone/*/junit-platform-console-standalone-*.jar | tail -1)
fi
CP=jccl-core/target-faults/test-classes:jccl-core/target-faults/classes:$(cat jccl-core/target-faults/cp.txt):$console
LOGS=bench/results/fault-load
mkdir -p "$LOGS"

hogs=()
for _ in $(seq "$(nproc)"); do
  (while :; do :; done) &
  hogs+=($!)
done
trap 'kill "${hogs[@]}" 2>/dev/null' EXIT
echo "$(date -u +%FT%TZ) $(nproc) cores, $(nproc) busy loops beside the tests, $RUNS runs per class"

declare -A pass
for c in "${CLASSES[@]}"; do pass[$c]=0; done
for run in $(seq "$RUNS"); do
  for c in "${CLASSES[@]}"; do
    log=$(mktemp)
    timeout -k 10 600 "$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xss4m \
      -cp "$CP" org.junit.platform.console.ConsoleLauncher execute --disable-banner --details=tree \
      --disable-ansi-colors --fail-if-no-tests --select-class "$c" > "$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
      pass[$c]=$(( ${pass[$c]} + 1 ))
      rm -f "$log"
    else
      mv "$log" "$LOGS/${c##*.}-run$run.log"
      echo "run $run: ${c##*.} FAILED (exit $rc): $LOGS/${c##*.}-run$run.log"
    fi
  done
  echo "run $run of $RUNS done $(date -u +%T)"
done
echo "| class | passed |"
echo "| --- | --- |"
for c in "${CLASSES[@]}"; do echo "| ${c##*.} | ${pass[$c]} of $RUNS |"; done
