# GPU health on one GPU node: as many GPUs as the machine type has, none with uncorrected ECC
# errors ("[N/A]" counts as an error, as in Cluster Toolkit's pre-NCCL health check).
. "${GATES_DIR:-/gates}/common.sh"
SMI="${NVIDIA_SMI:-/usr/local/nvidia/bin/nvidia-smi}"
out="$GATE_TMP/nvidia-smi.csv"
"$SMI" --query-gpu=index,ecc.errors.uncorrected.volatile.total --format=csv,noheader,nounits \
  > "$out" 2> "$out.err" || gate_abort "nvidia-smi failed: $(head -c 300 "$out" "$out.err")"
gate_result gpus "$(grep -c . "$out")" ">=" "${EXPECTED_GPUS:?}" GPUs
bad=$(awk -F, '{ gsub(/ /, "", $2) } $2 !~ /^[0-9]+$/ || $2 + 0 > 0 { n++ } END { print n + 0 }' "$out")
gate_result gpus_with_uncorrected_ecc "$bad" "<=" 0 GPUs
gate_finish
