"""What a user gets from `python -m project` with each config, and with a bad command line."""

from pathlib import Path

import pytest

from support import DEFAULT, QUIET, ROOT, refusal, run, run_subprocess, slow_repeats, working_directory

CONFIGS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "configs").rglob("*.yaml"))
# Overrides that let a config written for GPUs run on this CPU-only machine (SyncBatchNorm needs CUDA).
ON_CPU = {"configs/gpu.yaml": ["--trainer.accelerator=cpu", "--trainer.devices=2", "--trainer.sync_batchnorm=false"]}
# FSDP's own tests (test_fsdp.py) run it on 2 processes: kill -9, SIGTERM, resume, test, predict, export.
ON_CPU["configs/fsdp.yaml"] = ["--trainer.accelerator=cpu", "--trainer.devices=2"]
# Needs a launcher on every node (alone it waits for the missing node): test_ddp_configs.py runs it as two torchrun
# nodes.
MULTI_NODE = {"configs/multinode.yaml"}


def test_there_is_a_default_a_gpu_and_debug_configs():
    assert {"configs/digits.yaml", "configs/gpu.yaml", "configs/debug/fast_dev_run.yaml"} <= set(CONFIGS)


@pytest.mark.parametrize("config", CONFIGS)
def test_every_config_starts_with_the_command_that_runs_it(config):
    first_line = (ROOT / config).read_text().splitlines()[0]
    assert first_line.startswith("# python -m project") and config in first_line


RUNNABLE = [c for c in CONFIGS if c not in ON_CPU and c not in MULTI_NODE]  # here, by themselves


# Each config builds other parts (a network, a logger, a debug setting), every day; but mlflow.yaml takes csv.yaml's
# path (a logger swapped by a config file) and costs 12 s here, mostly MLflow's import (its logger's own tests:
# lightning-runs/tests/test_loggers_mlflow.py).
@pytest.mark.parametrize(
    "config", slow_repeats(RUNNABLE, RUNNABLE, {"configs/loggers/mlflow.yaml": "configs/loggers/csv.yaml"})
)
def test_every_config_runs_a_fast_dev_run(config):
    cli = run("fit", "--config", str(ROOT / config), "--trainer.fast_dev_run=true")
    assert cli.trainer.state.finished and cli.trainer.global_step == 1


@pytest.mark.slow
@pytest.mark.parametrize("config", list(ON_CPU))
def test_gpu_config_runs_ddp_in_mixed_precision_on_cpu_with_overrides(config):
    """gpu.yaml's DDP over 2 processes (gloo) and 16-mixed, which Lightning turns into bf16-mixed on a CPU; fsdp.yaml's
    FSDP in bf16-mixed."""
    result = run_subprocess(
        "fit",
        "--config",
        DEFAULT,
        "--config",
        str(ROOT / config),
        *ON_CPU[config],
        "--trainer.fast_dev_run=true",
        *QUIET,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    assert "bfloat16" in output
    assert "MEMBER: 2/2" in output or config == "configs/fsdp.yaml", "DDP's line; ModelParallelStrategy prints none"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, object]:
    """Two short fits in one folder, the first with another learning rate: the folder, and the second (the default
    command) fit's LightningCLI."""
    home = tmp_path_factory.mktemp("two_runs")
    with working_directory(home):
        run("fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=2", "--model.lr=0.002")
        default = run("fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=2")
    return home, default


def test_default_callbacks_monitor_keys_the_model_logs(two_runs):
    _, cli = two_runs
    monitors = {c.monitor for c in cli.trainer.callbacks if getattr(c, "monitor", None)}
    assert monitors == {"val/loss", "val/acc"}
    assert monitors <= set(cli.trainer.callback_metrics)


def test_a_callback_monitoring_a_key_that_is_never_logged_is_an_error_before_training(capsys):
    args = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2", "--early_stopping.monitor=val/accuracy"]
    line = refusal(capsys, lambda: run("fit", *args))  # after the sanity check: no step, no folder (edges tests)
    assert line.startswith("error: EarlyStopping monitors val/accuracy, which DigitsClassifier does not log (it logs:")


def test_an_unknown_config_key_exits_2_with_one_clear_line(capsys):
    # In this process, through the entry point that turns errors into exit codes; tests/test_run_outcomes.py sends a
    # bad option to a separate `python -m project` process.
    line = refusal(capsys, lambda: run("fit", "--model.learning_rate=0.1"))
    assert "learning_rate" in line
    assert not Path("runs").exists()


def test_each_run_saves_its_resolved_config_in_its_own_directory(two_runs):
    home, _ = two_runs
    first, second = home / "runs/digits/version_0/config.yaml", home / "runs/digits/version_1/config.yaml"
    assert "lr: 0.002" in first.read_text() and "lr: 0.002" not in second.read_text()
    assert "seed_everything: 0" in first.read_text()


def test_the_entry_point_names_the_tools_and_runs_them(capsys):
    """`python -m project --help` lists the tools beside the subcommands; `python -m project runs` runs one."""
    from lightning_runs import TOOLS

    from project.cli import run as entry_point

    with pytest.raises(SystemExit) as exit:
        entry_point(["--help"])
    assert exit.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert all(f"python -m project {tool}" in help_text for tool in TOOLS), help_text[-400:]
    assert entry_point(["runs"]) == [] and "no runs in runs/" in capsys.readouterr().out
