# NCCL across every GPU node over gIB, with Google's diagnostic image: one pod per node (an
# Indexed Job, hostnames <job>-<index>.<subdomain>); every pod runs the image's sshd, pod 0
# waits for the others, runs nccl-tests through mpirun (one rank per GPU, 1K..8G) and judges
# the output; then it tells the others to exit. Runs under bash (the workers' setup sources
# Google's set_nccl_env.sh, and ${!NCCL*} lists the variables mpirun must pass on).
. "${GATES_DIR:-/gates}/common.sh"
NCCL_TESTS="${NCCL_TESTS:-/third_party/nccl-tests/build}"
ENTRY="${CONTAINER_ENTRY:-/scripts/container_entry.sh}"
RANK="${JOB_COMPLETION_INDEX:?}"
SIZE=8589934592
ssh_to() { ssh -q -o LogLevel=ERROR -o StrictHostKeyChecking=no -p 222 "$@"; }

eval "${GPU_SETUP:?}" || gate_abort "the workers' gIB setup failed"
"$ENTRY" daemon > "$GATE_TMP/sshd.log" 2>&1 &

if [ "$RANK" != 0 ]; then
  # Serve ranks for pod 0 until it is done (the Job's deadline bounds the wait).
  until [ -e "$GATE_TMP/gate-done" ]; do sleep "${PEER_WAIT_SECONDS:-5}"; done
  echo "$GATE_NAME: node $RANK served its ranks"
  exit 0
fi

: > "$GATE_TMP/hostfile"
for i in $(seq 0 $((${NODES:?} - 1))); do
  host="${GATE_JOB:?}-$i.${GATE_DOMAIN:?}"
  tries=0
  until ssh_to "$host" hostname > /dev/null 2>&1; do
    tries=$((tries + 1))
    [ "$tries" -gt "${PEER_WAIT_TRIES:-90}" ] && gate_abort "node $i ($host) never answered on ssh port 222"
    sleep "${PEER_WAIT_SECONDS:-10}"
  done
  echo "$host port=222 slots=${EXPECTED_GPUS:?}" >> "$GATE_TMP/hostfile"
done

export NCCL_DEBUG=INFO
for collective in ${COLLECTIVES:?}; do
  log="$GATE_TMP/$collective.log"
  # shellcheck disable=SC2046 # one -x per variable
  mpirun --hostfile "$GATE_TMP/hostfile" \
    $(for v in ${!NCCL*} LD_LIBRARY_PATH PATH; do printf -- '-x %s ' "$v"; done) \
    --mca plm_rsh_no_tree_spawn 1 --mca orte_keep_fqdn_hostnames 1 \
    --mca btl self,tcp --mca btl_tcp_if_include eth0 --bind-to none \
    --mca plm_rsh_agent "ssh -q -o LogLevel=ERROR -o StrictHostKeyChecking=no -p 222" \
    "$NCCL_TESTS/${collective}_perf" -b 1K -e 8G -f 2 -g 1 -w 5 --iters 100 -c 1 \
    > "$log" 2>&1 || echo "$GATE_NAME: mpirun of $collective exited $?"
  gate_result "${collective}_network" "$(nccl_network "$log")" "=" gIB name
  gate_result "${collective}_wrong_values" "$(nccl_wrong "$log")" "<=" 0 values
  min=$(eval echo "\${MIN_BUSBW_$collective:-}")
  busbw=$(nccl_busbw "$SIZE" "$log")
  if [ -n "$min" ]; then
    gate_result "${collective}_busbw_8GiB" "$busbw" ">=" "$min" GB/s
  else
    gate_result "${collective}_busbw_8GiB" "$busbw" ">=" 0 GB/s
  fi
  avg_min=$(eval echo "\${MIN_AVG_BUSBW_$collective:-0}")
  gate_result "${collective}_avg_busbw" "$(nccl_avg "$log")" ">=" "$avg_min" GB/s
done

for i in $(seq 1 $((NODES - 1))); do
  ssh_to "$GATE_JOB-$i.$GATE_DOMAIN" touch "$GATE_TMP/gate-done" || true
done
gate_finish
