# The project and uv.lock's releases in an image, run as a user without root. CPU by default:
#   docker build -t project .
#   docker run --rm project fit --config configs/digits.yaml
# On NVIDIA GPUs, a CUDA base (the lock's torch brings its own CUDA libraries; the base brings NVIDIA's runtime set-up):
#   docker build --build-arg BASE=nvidia/cuda:12.9.1-cudnn-runtime-ubuntu24.04 -t project:cuda .
#   docker run --rm --gpus all project:cuda fit --config configs/digits.yaml --trainer.accelerator gpu
# A base without Python (CUDA's) gets the version .python-version names from uv. SYNC: what `uv sync --locked` adds
# (the devcontainer passes "" for the dev group: tests, lint).
ARG BASE=python:3.11-slim
FROM ${BASE}
ARG SYNC="--no-dev --all-extras"

# git: uv fetches a copy's library from the template's git repository; make: the Makefile's targets.
# Unpinned (DL3008): the base is Debian's or Ubuntu's, whose package versions differ; uv.lock pins what matters.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates git make \
    && rm -rf /var/lib/apt/lists/*
COPY --from=ghcr.io/astral-sh/uv:0.13.9 /uv /uvx /usr/local/bin/
# By number: a host that mounts a folder in sees the same owner (1000, most often the first user's).
RUN useradd --create-home --shell /bin/bash --uid 1000 runner
USER 1000:1000
WORKDIR /home/runner/project
ENV UV_COMPILE_BYTECODE=1 UV_LINK_MODE=copy PATH=/home/runner/project/.venv/bin:$PATH

COPY --chown=1000:1000 . .
RUN uv sync --locked ${SYNC} && rm -rf /home/runner/.cache/uv
ENTRYPOINT ["python", "-m", "project"]
CMD ["--help"]
