# RDMA on one GPU node, in a pod shaped like the Ray workers (same interfaces annotation, host
# paths and shell setup): every RDMA device is there with its network interface, and NCCL,
# started the way Ray starts training, picks the gIB network rather than falling back to TCP
# sockets. Runs under bash: the workers' setup sources Google's set_nccl_env.sh.
. "${GATES_DIR:-/gates}/common.sh"
IB="${IB_SYSFS:-/sys/class/infiniband}"
NCCL_TESTS="${NCCL_TESTS:-/third_party/nccl-tests/build}"
devices=0
for dev in "$IB"/*; do
  [ -e "$dev/device/net" ] && devices=$((devices + 1))
done
gate_result rdma_devices "$devices" ">=" "${EXPECTED_RDMA:?}" devices
# The workers' own environment (GPU_SETUP is the Ray worker's setup, word for word).
eval "${GPU_SETUP:?}" || gate_abort "the workers' gIB setup failed"
log="$GATE_TMP/nccl-single-node.log"
NCCL_DEBUG=INFO "$NCCL_TESTS/all_reduce_perf" -b 1M -e 1M -g "${EXPECTED_GPUS:?}" > "$log" 2>&1 \
  || gate_abort "all_reduce_perf failed: $(tail -c 300 "$log")"
gate_result nccl_network "$(nccl_network "$log")" "=" gIB name
gate_finish
