# Throughput of the shared volume (/data) from every GPU node at once: one pod per node (an
# Indexed Job); each writes, then reads, its own files with fio for a fixed time, all nodes
# starting each phase together (a barrier of files on the shared volume itself); pod 0 adds
# the nodes' bandwidths and judges the sum against the volume's provisioned throughput.
. "${GATES_DIR:-/gates}/common.sh"
RANK="${JOB_COMPLETION_INDEX:?}"
# One folder per run of the Job (its UID): a re-run never meets an earlier run's files.
DIR="${GATE_DATA:?}/${GATE_JOB:?}/${GATE_RUN_ID:?}"
mkdir -p "$DIR/$RANK" || gate_abort "cannot create $DIR on the shared volume"
# The Job's whole folder goes when pod 0 has judged (below); the other pods only clean their own.

# wait_for NAME COUNT: until COUNT nodes have left a NAME-<rank> marker.
wait_for() {
  tries=0
  while [ "$(ls "$DIR" | grep -c "^$1-[0-9]*\$")" -lt "$2" ]; do
    tries=$((tries + 1))
    [ "$tries" -gt "${PEER_WAIT_TRIES:-360}" ] && gate_abort "not every node reached $1"
    sleep "${PEER_WAIT_SECONDS:-1}"
  done
}

barrier() {
  touch "$DIR/$1-$RANK"
  wait_for "$1" "${NODES:?}"
}

measure() {
  fio --name="$1" --directory="$DIR/$RANK" --rw="$1" --bs=1m --size="${FIO_SIZE:?}" \
    --numjobs="${FIO_JOBS:?}" --direct="${FIO_DIRECT:-1}" --ioengine=psync --group_reporting \
    --time_based --runtime="${FIO_RUNTIME:?}" --ramp_time=2 --output-format=json \
    --output="$DIR/$1-$RANK.json" > "$GATE_TMP/fio-$1.log" 2>&1 \
    || gate_abort "fio $1 failed on node $RANK: $(tail -c 300 "$GATE_TMP/fio-$1.log")"
}

barrier start-write
measure write
barrier start-read
measure read
rm -rf "${DIR:?}/$RANK"
mine="$(fio_bw_bytes write "$DIR/write-$RANK.json") B/s write, $(fio_bw_bytes read "$DIR/read-$RANK.json") B/s read"
barrier done

if [ "$RANK" != 0 ]; then
  touch "$DIR/left-$RANK"  # pod 0 removes the folder only once every other pod is past it
  echo "$GATE_NAME: node $RANK measured $mine"
  exit 0
fi
for phase in write read; do
  total=0
  errors=0
  for i in $(seq 0 $((NODES - 1))); do
    bw=$(fio_bw_bytes "$phase" "$DIR/$phase-$i.json")
    [ -n "$bw" ] || gate_abort "no fio $phase result from node $i"
    total=$((total + bw))
    errors=$((errors + $(fio_errors "$DIR/$phase-$i.json")))
  done
  gate_result "${phase}_errors" "$errors" "<=" 0 errors
  gate_result "${phase}_throughput" "$(awk -v b="$total" 'BEGIN { printf "%.0f", b / 1e6 }')" \
    ">=" "${MIN_MBPS:?}" MB/s
done
wait_for left $((NODES - 1))
rm -rf "$DIR"
gate_finish
