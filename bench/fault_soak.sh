#!/usr/bin/env bash
# Random-kill soak (a bench, not a test: minutes long and random). A study of CELLS tiny cells
# runs on WORKERS workers while a trainer, a worker or the coordinator is killed (-9) at random
# every few seconds for DURATION seconds; then the study is left to finish, and every cell must
# have succeeded with exactly the train/loss points of an uninterrupted run.
#
#   CELLS=24 WORKERS=3 DURATION=90 bench/fault_soak.sh
#
# An `onset watch` follows the study throughout (reconnecting after each coordinator kill) and
# must report every cell's success exactly once.
#
# Needs sqlite3 and python3; exits non-zero when a cell did not succeed, its curve is wrong, or
# the watch missed or repeated an end.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${ONSET_BIN_DIR:-$root/build/bin}
dir=$(mktemp -d /tmp/onset-soak-XXXXXX)
cells=${CELLS:-24}; workers=${WORKERS:-3}; duration=${DURATION:-90}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
addr=127.0.0.1:$port
seeds=$(python3 -c "print(', '.join(str(i) for i in range($cells)))")
cat > $dir/soak.yaml <<YAML
name: soak
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1024, micro_batch: 16, log_every_steps: 8, checkpoint_every_tokens: 16384}
eval: {every_tokens: 65536, heldout_seqs: 2, niah_lengths: [64], niah_depths: [0.5], niah_samples: 1}
grid:
  arch: [full]
  tokens: [131072]
  seeds: [$seeds]
YAML
start_daemon() { $bin/onsetd --db $dir/onset.db --listen $addr --lease-ttl-ms 4000 --heartbeat-interval-ms 300 --retry-backoff-ms 200 --max-failures 20 --checkpoint-root $dir/ckpt >>$dir/onsetd.log 2>&1 & echo $! > $dir/onsetd.pid; }
start_worker() { $bin/onset-worker --coordinator $addr --token-file $dir/onsetd.token --work-dir $dir/w$1 --checkpoint-root $dir/ckpt --slots 1 --threads-per-job 1 >>$dir/worker$1.log 2>&1 & echo $! > $dir/worker$1.pid; }
start_daemon; sleep 1
for w in $(seq $workers); do start_worker $w; done
$bin/onset --coordinator $addr --token-file $dir/onsetd.token submit $dir/soak.yaml
$bin/onset --coordinator $addr --token-file $dir/onsetd.token watch soak >$dir/watch.out 2>$dir/watch.err &
watch_pid=$!
kills=0; end=$((SECONDS + duration))
while [ $SECONDS -lt $end ]; do
  sleep $((2 + RANDOM % 4))
  case $((RANDOM % 3)) in
    0) pid=$(pgrep -f "onset-train.*$dir" | shuf -n1); [ -n "$pid" ] && kill -9 $pid && echo "killed trainer $pid" && kills=$((kills+1)) ;;
    1) w=$((1 + RANDOM % workers)); kill -9 $(cat $dir/worker$w.pid) 2>/dev/null; pkill -9 -f "onset-train.*$dir/w$w/" ; echo "killed worker $w"; kills=$((kills+1)); sleep 1; start_worker $w ;;
    2) kill -9 $(cat $dir/onsetd.pid); echo "killed onsetd"; kills=$((kills+1)); sleep 1; start_daemon ;;
  esac
done
echo "kills: $kills; waiting for the study to finish"
for i in $(seq 600); do
  done_=$(sqlite3 $dir/onset.db "select count(*) from cells where state='succeeded'" 2>/dev/null)
  [ "$done_" = "$cells" ] && break; sleep 1
done
echo "succeeded: $done_ of $cells"
sqlite3 $dir/onset.db "select state, count(*) from cells group by state"
sqlite3 $dir/onset.db "select outcome, failure_class, count(*) from attempts group by 1,2"
# Every cell must have exactly the 16 train/loss points of the uninterrupted run.
bad=$(sqlite3 $dir/onset.db "select c.hash from cells c where (select count(*) from metrics m where m.cell_id=c.id and m.name='train/loss') != 16 or (select group_concat(tokens) from (select tokens from metrics m where m.cell_id=c.id and m.name='train/loss' order by tokens)) != '8192,16384,24576,32768,40960,49152,57344,65536,73728,81920,90112,98304,106496,114688,122880,131072'")
echo "cells with a wrong curve: ${bad:-none}"
echo "points: $(sqlite3 $dir/onset.db "select count(*) from metrics")"
for i in $(seq 60); do kill -0 $watch_pid 2>/dev/null || break; sleep 1; done
wait $watch_pid; watch_rc=$?
watch_ends=$(grep -c -- '-> succeeded' $dir/watch.out)
watch_cells=$(grep -- '-> succeeded' $dir/watch.out | awk '{print $2}' | sort -u | wc -l)
echo "watch: exit $watch_rc, $watch_ends successes seen for $watch_cells cells, $(grep -c reconnected $dir/watch.err) reconnects"
kill $(cat $dir/worker*.pid) 2>/dev/null; sleep 2; kill $(cat $dir/onsetd.pid) 2>/dev/null
if [ "${done_:-0}" = "$cells" ] && [ -z "$bad" ] && [ "$watch_rc" = 0 ] && [ "$watch_ends" = "$cells" ] && [ "$watch_cells" = "$cells" ]; then
  rm -rf "$dir"
  exit 0
fi
echo "kept for inspection: $dir"
exit 1
