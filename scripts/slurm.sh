#!/bin/bash
# sbatch scripts/slurm.sh [more python -m project fit options]
#
# Trains the GPU config on 2 nodes x 4 GPUs. Submit it from the repository root with the project's environment
# active (sbatch passes the environment on to the job): `source .venv/bin/activate && sbatch scripts/slurm.sh`.
# srun starts one task per GPU; Lightning's SLURMEnvironment reads each task's rank from SLURM_PROCID,
# SLURM_LOCALID and SLURM_NODEID, the world size from SLURM_NTASKS, the address of node 0 from SLURM_NODELIST,
# and a port from the job id. Nothing here starts processes besides srun.
#
# Change the #SBATCH lines to your cluster (partition, account, time); num_nodes and devices follow from them.
# Resubmitting with `--ckpt_path last` continues the newest run of runs/digits where it stopped.
#SBATCH --job-name=digits
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --gres=gpu:4
#SBATCH --cpus-per-task=8
#SBATCH --time=01:00:00
set -euo pipefail

# Lightning refuses to start unless devices equals --ntasks-per-node and num_nodes equals --nodes: taking both
# from the job keeps them in step with the #SBATCH lines above.
srun python -m project fit --config configs/digits.yaml --config configs/gpu.yaml \
    --trainer.num_nodes "$SLURM_JOB_NUM_NODES" --trainer.devices "$SLURM_NTASKS_PER_NODE" "$@"
