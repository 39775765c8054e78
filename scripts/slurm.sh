#!/bin/bash
# sbatch scripts/slurm.sh [more python -m project fit options]
#
# Trains the GPU config on 2 nodes x 4 GPUs. Submit it from the repository root with the project's environment
# active (sbatch passes the environment on to the job): `source .venv/bin/activate && sbatch scripts/slurm.sh`.
# srun starts one task per GPU; Lightning's SLURMEnvironment reads each task's rank from SLURM_PROCID,
# SLURM_LOCALID and SLURM_NODEID, the world size from SLURM_NTASKS, the address of node 0 from SLURM_NODELIST,
# and a port from the job id. Nothing here starts processes besides srun (and scontrol, to requeue).
#
# Preemption comes back by itself: 5 minutes before the time limit SLURM sends SIGTERM to every task; each saves
# last.ckpt and exits 143, and this script then requeues the job, which resumes into the same run folder,
# runs/<name>/slurm-<job id>. `scancel` ends the job for good.
#
# Change the #SBATCH lines to your cluster (partition, account, time); num_nodes and devices follow from them.
#SBATCH --job-name=digits
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --gres=gpu:4
#SBATCH --cpus-per-task=8
#SBATCH --time=01:00:00
# SIGTERM to the tasks of the job steps 300 s before the limit (SLURM may send it up to 60 s earlier): time to
# finish the batch and write last.ckpt. Without `B:` the batch shell is not signalled, which is how this script
# tells that signal from scancel's, which reaches the shell too.
#SBATCH --signal=TERM@300
#SBATCH --requeue
#SBATCH --open-mode=append
set -euo pipefail

# One run folder per job, kept by every attempt of it: an array task's own, job_task, as squeue shows it.
job=${SLURM_ARRAY_JOB_ID:+${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}}
job=${job:-$SLURM_JOB_ID}

cancelled=0
trap 'cancelled=1' TERM # bash runs it once srun has returned: the tasks still save and stop as on any SIGTERM

# Lightning refuses to start unless devices equals --ntasks-per-node and num_nodes equals --nodes: taking both
# from the job keeps them in step with the #SBATCH lines above. With the version pinned, `--ckpt_path last` is
# this run's own last.ckpt: none on the first attempt (a start from step 0), the stopped attempt's after a
# requeue. Options given to sbatch come after, so they win.
status=0
srun python -m project fit --config configs/digits.yaml --config configs/gpu.yaml \
    --trainer.num_nodes "$SLURM_JOB_NUM_NODES" --trainer.devices "$SLURM_NTASKS_PER_NODE" \
    --trainer.logger.init_args.version "slurm-$job" --ckpt_path last "$@" || status=$?

# 143: "stopped by SIGTERM, saved last.ckpt" (lightning_runs/faults/checkpoint_on_signal.py). The requeue, rather
# than Lightning's own SLURM auto-requeue: that one listens for SIGUSR1, writes hpc_ckpt_N.ckpt into the working
# directory and resumes from there into a new run folder; this keeps one run folder, its atomic last.ckpt and the exact
# resume. Lightning's handler never acts here: nothing sends SIGUSR1.
if ((status == 143 && !cancelled)); then
    echo "slurm.sh: stopped by SIGTERM, not by scancel: requeueing job $job, which resumes run slurm-$job" >&2
    scontrol requeue "$job"
fi
exit "$status"
