# Shared by every acceptance gate (POSIX sh + awk: the gates run in images we do not build).
#
# A gate records measurements with `gate_result`, then calls `gate_finish`. The verdict goes
# to stdout and to the container's termination message (the kubelet keeps it in the pod's
# status, where pulumi-kubernetes reads it when the Job fails, and where `make verify` reads
# it afterwards): first one line a person reads, then one RESULT line per measurement.

GATE_NAME="${GATE_NAME:?GATE_NAME is set by the Job}"
GATE_SCOPE="${GATE_SCOPE:-${NODE_NAME:-this node}}"
TERMINATION_LOG="${TERMINATION_LOG:-/dev/termination-log}"
GATE_TMP="${GATE_TMP:-/tmp}"
GATE_RESULTS="$GATE_TMP/gate-results"
: > "$GATE_RESULTS"

# gate_result METRIC VALUE OP THRESHOLD UNIT
# OP is >=, <= (numbers) or = (words). An empty VALUE means "not measured" and fails.
gate_result() {
  verdict=$(awk -v v="$2" -v op="$3" -v t="$4" 'BEGIN {
    if (v == "") { print "FAIL"; exit }
    if (op == ">=") ok = (v + 0 >= t + 0)
    else if (op == "<=") ok = (v + 0 <= t + 0)
    else ok = (v == t)
    print (ok ? "PASS" : "FAIL")
  }')
  value="${2:-none}"
  echo "RESULT $GATE_NAME $1 $value $3 $4 $5 $verdict $GATE_SCOPE" >> "$GATE_RESULTS"
  echo "$GATE_NAME: $1 = $value $5 (needs $3 $4): $verdict"
}

# gate_abort MESSAGE: the gate could not measure at all.
gate_abort() {
  echo "RESULT $GATE_NAME run none = ok - FAIL $GATE_SCOPE" >> "$GATE_RESULTS"
  gate_report "$GATE_NAME gate FAILED on $GATE_SCOPE: $1"
  exit 1
}

gate_report() {
  { echo "$1"; cat "$GATE_RESULTS"; } > "$GATE_TMP/gate-message"
  # The kubelet keeps at most 4096 bytes of a termination message.
  head -c 4000 "$GATE_TMP/gate-message" > "$TERMINATION_LOG" 2>/dev/null || true
  cat "$GATE_TMP/gate-message"
}

# gate_finish: one line naming every failed measurement (or all of them on success).
gate_finish() {
  failed=$(awk '$8 == "FAIL" { printf "%s%s %s %s (needs %s %s)", sep, $3, $4, $7, $5, $6; sep = "; " }' "$GATE_RESULTS")
  if [ -n "$failed" ]; then
    gate_report "$GATE_NAME gate FAILED on $GATE_SCOPE: $failed"
    exit 1
  fi
  passed=$(awk '{ printf "%s%s %s %s (%s %s)", sep, $3, $4, $7, $5, $6; sep = "; " }' "$GATE_RESULTS")
  gate_report "$GATE_NAME gate passed on $GATE_SCOPE: $passed"
  exit 0
}

# --- nccl-tests output (all_gather_perf, all_reduce_perf: one row per size) ---
# Columns: size count type redop root | out-of-place time algbw busbw #wrong | in-place ...

# nccl_busbw SIZE FILE: out-of-place bus bandwidth (GB/s) of the row for SIZE bytes.
nccl_busbw() {
  awk -v size="$1" '$1 == size && NF >= 13 && $1 ~ /^[0-9]+$/ { bw = $8 } END { print bw }' "$2"
}

# nccl_avg FILE: the "# Avg bus bandwidth : N" line.
nccl_avg() {
  awk -F: '/^# *Avg bus bandwidth/ { gsub(/ /, "", $2); avg = $2 } END { print avg }' "$1"
}

# nccl_wrong FILE: sum of the #wrong columns (out-of-place and in-place) over every row.
nccl_wrong() {
  awk 'NF >= 13 && $1 ~ /^[0-9]+$/ { rows++; if ($9 ~ /^[0-9]+$/) n += $9; if ($13 ~ /^[0-9]+$/) n += $13 }
       END { if (rows) print n + 0 }' "$1"
}

# nccl_network FILE: the network NCCL chose ("NCCL INFO Using network gIB"); Socket when it
# fell back to TCP sockets on any rank; empty when NCCL_DEBUG=INFO lines are missing.
nccl_network() {
  awk '/NCCL INFO Using network / {
         for (i = 1; i <= NF; i++) if ($i == "network") name = $(i + 1)
         if (name == "Socket") socket = 1; else if (chosen == "") chosen = name
       }
       END { if (socket) print "Socket"; else print chosen }' "$1"
}

# --- fio JSON (fio --output-format=json, pretty-printed one key per line) ---

# fio_bw_bytes SECTION FILE: the sum over jobs of SECTION's ("read"/"write") bw_bytes.
fio_bw_bytes() {
  awk -v section="\"$1\"" '
    $1 == section && $2 == ":" && $3 == "{" { inside = 1; next }
    inside && $1 == "\"bw_bytes\"" { gsub(/,/, "", $3); total += $3; inside = 0 }
    END { if (total != "") printf "%.0f\n", total }' "$2"  # (%d stops at 2^31 in mawk)
}

# fio_errors FILE: the sum of the jobs' "error" fields.
fio_errors() {
  awk '$1 == "\"error\"" && $2 == ":" { gsub(/,/, "", $3); n += $3; seen = 1 } END { if (seen) print n + 0 }' "$1"
}
