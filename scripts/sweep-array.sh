#!/bin/bash
# sbatch --array=0-7 scripts/sweep-array.sh [more python -m project sweep options]
#
# Runs the study of sweeps/digits.yaml with one sweep worker per array task (8 above), all on one study. Submit it
# from the repository root with the project's environment active (sbatch passes the environment on to the job):
# `source .venv/bin/activate && sbatch --array=0-7 scripts/sweep-array.sh`. Each worker takes the next trial from
# the study's storage and runs it as its own `python -m project fit` process; the workers stop together once the
# study holds n_trials finished trials. A task that dies (preempted, its node lost) takes its trial along: another
# worker notices it (below) and retries the trial's values. Submitting the
# array again continues the study; a finished study starts nothing.
#
# The storage: the default journal file runs/sweeps/<study>.journal is for the workers of one machine (a worker
# sees only its own machine's processes, so a task lost with its node would leave its trial RUNNING on a journal the
# nodes share). For tasks on several nodes, give a database server every node reaches (docs/scaling.md):
#   STORAGE=postgresql+psycopg2://user:password@dbhost/optuna sbatch --array=0-31 scripts/sweep-array.sh
# (the driver is lightning-runs' postgres extra, psycopg2-binary; the study is created on first use). Its heartbeat
# tells a lost task's trial after --grace_period seconds.
#
# Each worker runs its trials as `srun python -m project fit ...` steps on its task's GPUs, as scripts/slurm.sh trains:
# the GPU config (configs/gpu.yaml, DDP on every GPU of the task) with one process per GPU. A trial on two GPUs:
# `sbatch --array=0-3 --ntasks-per-node=2 --gres=gpu:2 scripts/sweep-array.sh`.
#SBATCH --job-name=digits-sweep
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=8
#SBATCH --time=04:00:00
set -euo pipefail

# The worker itself runs in the batch step; srun starts each trial's processes. OMP_NUM_THREADS of each trial follows
# the CPUs SLURM gave a task.
python -m project sweep --config sweeps/digits.yaml --configs '[configs/digits.yaml, configs/gpu.yaml]' \
    --launcher '[srun]' --threads "${SLURM_CPUS_PER_TASK:-1}" ${STORAGE:+--storage "$STORAGE"} "$@"
