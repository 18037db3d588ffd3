#!/bin/sh
# Stands in for onset-train in the worker's tests. The first word of the --config file picks the
# behaviour; the arguments and environment are echoed to stderr for the tests to inspect.
config=""
checkpoint_dir=""
resume=0
resume_from=""
supervisor_fd=""
device=""
nproc=""
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config="$2"; shift 2 ;;
    --checkpoint-dir) checkpoint_dir="$2"; shift 2 ;;
    --resume) resume=1; shift ;;
    --resume-from) resume_from="$resume_from $2"; shift 2 ;;
    --supervisor-fd) supervisor_fd="$2"; shift 2 ;;
    --device) device="$2"; shift 2 ;;
    --nproc) nproc="$2"; shift 2 ;;
    *) shift ;;
  esac
done
mode=$(head -c 64 "$config" | cut -d' ' -f1)
echo "fake trainer: mode=$mode threads=$OMP_NUM_THREADS cwd=$(pwd)" >&2
echo "fake trainer: checkpoint_dir=$checkpoint_dir resume=$resume" \
  "resume_from=[${resume_from# }] supervisor_fd=$supervisor_fd" \
  "device=$device nproc=$nproc cuda_visible_devices=${CUDA_VISIBLE_DEVICES-unset}." >&2

case "$mode" in
  success)
    echo '{"event":"start","tokens":0,"metrics":{}}'
    echo '{"event":"train","tokens":100,"step":1,"metrics":{"train/loss":3.5,"train/lr":0.001,"train/tokens_per_second":1000}}'
    echo 'this line is not json'
    echo '{"event":"train","tokens":200,"step":2,"metrics":{"train/loss":3.0,"train/lr":null,"train/tokens_per_second":1100}}'
    echo '{"event":"eval","tokens":200,"metrics":{"eval/heldout_loss":2.9,"niah/acc":0.25}}'
    echo '{"event":"done","tokens":200,"metrics":{"train/tokens_per_second":1050}}'
    exit 0 ;;
  many)
    i=1
    while [ $i -le 1200 ]; do
      echo "{\"event\":\"train\",\"tokens\":$i,\"metrics\":{\"train/loss\":1.5}}"
      i=$((i + 1))
    done
    exit 0 ;;
  fail)
    i=1
    while [ $i -le 200 ]; do
      echo "stderr line $i" >&2
      i=$((i + 1))
    done
    echo '{"event":"train","tokens":50,"metrics":{"train/loss":4.0}}'
    exit 1 ;;
  bad_utf8)
    printf 'bad byte \377 here\n' >&2
    echo '{"event":"train","tokens":100,"metrics":{"train/loss":3.5}}'
    printf 'cut \342\202' >&2
    exit 0 ;;
  bad_metrics)
    echo '{"event":"train","tokens":100,"metrics":{"train/loss":3.5}}'
    echo '{"event":"train","tokens":-1,"metrics":{"train/loss":3.4}}'
    echo '{"event":"train","tokens":9223372036854775807,"metrics":{"train/loss":3.3}}'
    echo '{"event":"train","tokens":200,"metrics":{"":1.0,"train/loss":3.0}}'
    sleep 0.3
    exit 0 ;;
  long_lines)
    line=$(head -c 8000 /dev/zero | tr '\0' L)
    i=1
    while [ $i -le 400 ]; do
      echo "$line" >&2
      i=$((i + 1))
    done
    exit 0 ;;
  diverged)
    echo '{"event":"diverged","tokens":300,"metrics":{"train/loss":null}}'
    echo "loss is NaN" >&2
    exit 3 ;;
  stopped)
    echo '{"event":"train","tokens":100,"metrics":{"train/loss":3.5}}'
    echo "stopping: checkpointed at 100 tokens" >&2
    exit 4 ;;
  signal)
    echo "about to die" >&2
    kill -9 $$ ;;
  slow_stop)
    # Takes 3 s to checkpoint and exit on SIGTERM, as a trainer of a large model may.
    echo '{"event":"train","tokens":10,"metrics":{"train/loss":5.0,"train/tokens_per_second":10}}'
    trap 'sleep 3; exit 4' TERM
    while :; do sleep 0.1; done ;;
  hang)
    echo '{"event":"train","tokens":10,"metrics":{"train/loss":5.0,"train/tokens_per_second":10}}'
    # A child in the same group, to check that termination reaches it.
    sleep 1000 &
    echo "child $!" >&2
    wait ;;
  *)
    echo "unknown mode '$mode'" >&2
    exit 2 ;;
esac
