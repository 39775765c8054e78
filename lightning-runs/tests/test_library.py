"""What a project using the library gets, on the library's own tiny task (tiny_tasks.py) through its `cli_main`, as
a user types the commands: run folders and their checkpoints, the summary of the monitored metric, an exact resume,
predictions, the export, a bad option in one line, the progress bar's rate and the commands it tells a user to type."""

import csv
import gc
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import onnxruntime
import pytest
import torch
import yaml
from lightning.pytorch.callbacks import ProgressBar
from tiny_runs import run

import lightning_runs
from lightning_runs.errors import main
from lightning_runs.testing import CrashAt
from lightning_runs.tools.export import export
from tiny_tasks import TinyClassifier, cli_main

SHORT = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=3"]
CAPTURE = {"capture_output": True, "text": True, "timeout": 120}


@dataclass
class Fitted:
    folder: Path  # runs/<name>/version_0 of a short fit
    tested: dict[str, float]  # what `test --ckpt_path best` measured


@pytest.fixture(scope="module")
def fitted(tmp_path_factory) -> Fitted:
    """A short fit, then `test --ckpt_path best`, in a directory of their own."""
    home = tmp_path_factory.mktemp("fitted")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(home)
        fit = run("fit", *SHORT)
        test = run("test", "--ckpt_path", "best")
    return Fitted(home / fit.trainer.logger.log_dir, {k: v.item() for k, v in test.trainer.callback_metrics.items()})


def test_a_fit_writes_its_run_folder_with_both_checkpoints_and_a_summary_of_the_monitored_metric(fitted):
    folder = fitted.folder
    assert folder.relative_to(folder.parents[2]) == Path("runs/tiny/version_0"), "the project's default name"
    assert {p.name for p in (folder / "checkpoints").iterdir()} >= {"best.ckpt", "last.ckpt"}
    best = json.loads((folder / "summary.json").read_text())["best_checkpoint"]
    assert (best["monitor"], best["mode"]) == ("val/loss", "min")


def test_a_test_of_the_best_checkpoint_records_the_monitored_metrics_counterpart(fitted):
    metrics = json.loads((fitted.folder / "summary.json").read_text())["metrics"]
    assert metrics["test/loss"] == pytest.approx(fitted.tested["test/loss"])


def test_predict_writes_one_row_per_sample(fitted):
    predict = run("predict", "--ckpt_path", str(fitted.folder / "checkpoints/best.ckpt"))
    samples = len(predict.datamodule.predict_dataloader().dataset)
    (path,) = Path(predict.trainer.logger.log_dir).glob("predictions*.csv")
    with path.open() as file:
        rows = list(csv.DictReader(file))
    assert [int(row["index"]) for row in rows] == list(range(samples))
    assert set(rows[0]) == {"index", "output_0", "output_1", "output_2"}, "(N, 3) probabilities: three columns"


def test_the_onnx_export_gives_the_models_outputs(fitted, tmp_path):
    best = fitted.folder / "checkpoints/best.ckpt"
    path = export(ckpt_path=best, format="onnx", output=tmp_path / "tiny.onnx")
    model = TinyClassifier.load_from_checkpoint(best, map_location="cpu", weights_only=True).eval()
    samples = torch.randn(5, *model.example_input_array.shape[1:])
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with torch.no_grad():
        expected = model(samples)
    for batch in (samples, samples[:1]):  # any batch size
        (exported,) = session.run(None, {session.get_inputs()[0].name: batch.numpy()})
        torch.testing.assert_close(torch.from_numpy(exported), expected[: len(batch)], atol=1e-5, rtol=1e-5)


def test_a_fit_stopped_after_its_first_epoch_resumes_to_the_same_weights(tmp_path, monkeypatch):
    steps = ["--trainer.max_epochs=3", "--trainer.limit_train_batches=3"]
    for folder in ("whole", "resumed"):
        (tmp_path / folder).mkdir()
    monkeypatch.chdir(tmp_path / "whole")
    run("fit", *steps)
    monkeypatch.chdir(tmp_path / "resumed")
    with pytest.raises(RuntimeError, match="crash"):
        run("fit", *steps, callbacks=[CrashAt(step=3)])  # as its second epoch begins
    last = Path("runs/tiny/version_0/checkpoints/last.ckpt")
    assert torch.load(last, weights_only=True)["global_step"] == 3, "last.ckpt is the end of its first epoch"
    run("fit", *steps, "--ckpt_path", "last")

    whole, resumed = (torch.load(tmp_path / f / last, weights_only=True) for f in ("whole", "resumed"))
    assert resumed["global_step"] == whole["global_step"] == 9
    for key, weights in whole["state_dict"].items():
        assert torch.equal(weights, resumed["state_dict"][key]), key
    for param, state in whole["optimizer_states"][0]["state"].items():
        for key, value in state.items():
            assert torch.equal(value, resumed["optimizer_states"][0]["state"][param][key]), (param, key)


def test_the_runs_table_answers_from_a_projects_main_without_importing_torch_or_the_project(fitted):
    main_py = (  # a project's __main__.py: the reader tool first, its CLI only for any other command
        "import atexit, gc, sys, lightning_runs\n"
        "atexit.register(lambda: print(sorted({'torch', 'lightning', 'my_exp'} & set(sys.modules))))\n"
        "print(lightning_runs.reader_tool('my_exp', sys.argv[1:]), gc.isenabled())\n"
    )
    table = subprocess.run([sys.executable, "-c", main_py, "runs"], cwd=fitted.folder.parents[2], **CAPTURE)
    assert table.returncode == 0 and table.stdout.splitlines()[-2:] == ["True True", "[]"], table.stderr[-2000:]
    assert f"{fitted.folder.relative_to(fitted.folder.parents[2])}  completed" in table.stdout
    other = subprocess.run([sys.executable, "-c", main_py, "fit"], **CAPTURE)
    # Any other command is the CLI's, which imports torch: with the garbage collector waiting until `main`.
    assert other.stdout.split() == ["False", "False", "[]"], other.stdout
    refused = subprocess.run([sys.executable, "-c", main_py, "runs", "--nme=x"], **CAPTURE)
    assert refused.returncode == 2 and "python -m my_exp runs" in refused.stderr
    assert refused.stdout.split() == ["[]"], "a refusal imports neither (it imported Lightning: a 5 s start-up)"


def test_a_command_runs_with_the_garbage_collector_on_and_what_was_imported_frozen():
    gc.disable()  # as reader_tool leaves it for the project's imports
    try:
        with pytest.raises(SystemExit):
            lightning_runs.main(cli_main, "tiny_tasks", ["fit", "--help"])
        assert gc.isenabled(), "a run without its collector would keep every cycle it makes"
        assert gc.get_freeze_count() > 0
    finally:
        gc.enable()


@pytest.mark.parametrize("sanity", ["--trainer.num_sanity_val_steps=2", "--trainer.num_sanity_val_steps=0"])
def test_a_fit_that_reaches_max_steps_inside_its_first_epoch_ends_with_its_last_checkpoint(sanity):
    fitted = run("fit", "--trainer.max_steps=2", sanity)  # 6 steps an epoch: no validation before it ends
    assert fitted.trainer.state.finished and fitted.trainer.global_step == 2
    assert Path(fitted.trainer.logger.log_dir, "checkpoints/last.ckpt").is_file()


def test_default_root_dir_is_the_runs_root_and_last_is_found_there_unless_the_loggers_save_dir_is_given():
    steps = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=2", "--trainer.default_root_dir=elsewhere"]
    with pytest.raises(RuntimeError, match="crash"):
        run("fit", *steps, callbacks=[CrashAt(step=2)])  # as its second epoch begins
    resumed = run("fit", *steps, "--ckpt_path=last")
    assert Path(resumed.trainer.logger.log_dir) == Path("elsewhere/tiny/version_0"), "resumed where it began"
    assert not Path("runs").exists()
    given = run("fit", *steps, "--trainer.max_steps=1", "--trainer.logger.init_args.save_dir=mine")  # the logger's wins
    assert Path(given.trainer.logger.log_dir) == Path("mine/tiny/version_0")


def test_a_bad_option_is_one_line_and_exit_2_and_leaves_no_run_folder(capsys):
    with pytest.raises(SystemExit) as exit_:
        run("fit", "--trainer.max_epochz=1")
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert exit_.value.code == 2 and errors == [
        "error: unknown option --trainer.max_epochz: did you mean --trainer.max_epochs?"
    ]
    assert "Traceback" not in err and not Path("runs").exists()


def test_the_messages_name_the_projects_own_package_as_the_command_to_type(capsys):
    """A copy renames its package, and the library is installed, not renamed: `python -m <the owner's package>`, here
    the tiny task's."""
    run("fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=2")
    closing = capsys.readouterr().out
    assert "  next         python -m tiny_tasks test --ckpt_path runs/tiny/version_0/checkpoints/best.ckpt" in closing
    with pytest.raises(SystemExit):
        main(lambda: cli_main(["--help"]))
    help_text = capsys.readouterr().out
    assert help_text.startswith("usage: python -m tiny_tasks ") and "python -m tiny_tasks export" in help_text
    with pytest.raises(SystemExit):
        run("fit", "stray")
    assert "python -m tiny_tasks <subcommand> --help lists the options" in capsys.readouterr().err
    assert "-m project" not in closing + help_text


def progress_bars(*args: str) -> list[tuple[str, int]]:
    # One step: the bars are the trainer's callbacks as the fit built them, whatever its length.
    fit = main(lambda: cli_main(["fit", "--trainer.max_steps=1", "--trainer.enable_model_summary=false", *args]))
    return [(type(c).__name__, c.refresh_rate) for c in fit.trainer.callbacks if isinstance(c, ProgressBar)]


def test_the_progress_bar_redraws_every_10th_batch_unless_the_config_gives_one_or_turns_it_off():
    assert progress_bars() == [("TQDMProgressBar", 10)]
    assert progress_bars("--trainer.callbacks+=TQDMProgressBar", "--trainer.callbacks.refresh_rate=1") == [
        ("TQDMProgressBar", 1)
    ]
    assert progress_bars("--trainer.enable_progress_bar=false") == progress_bars("--quiet") == []


def test_a_model_chosen_by_class_path_has_its_own_defaults_where_it_shares_the_default_models_names(capsys):
    """jsonargparse carries the default class's values over to the class chosen (jsonargparse #460): --print_config,
    which prints from inside the parse, showed TinyClassifier's lr 0.05 for SlowTinyClassifier's own 0.01."""
    chosen = ["--model=tiny_tasks.SlowTinyClassifier"]
    with pytest.raises(SystemExit) as exit_:
        run("fit", *chosen, "--print_config")
    assert exit_.value.code in (0, None)
    printed = yaml.safe_load(capsys.readouterr().out)
    # num_classes and input_shape are the data's (TinyCLI's links), set as the model is built: not options.
    assert printed["model"] == {"class_path": "tiny_tasks.SlowTinyClassifier", "init_args": {"lr": 0.01}}
    assert run("fit", *chosen, "--trainer.max_steps=1").model.hparams.lr == 0.01
    assert run("fit", "--trainer.max_steps=1").model.hparams.lr == 0.05, "the default model keeps its own"


class FiveClassesByDefault(TinyClassifier):
    def __init__(self, num_classes: int = 5, input_shape: tuple[int, ...] = (4,), lr: float = 0.05) -> None:
        super().__init__(num_classes, input_shape, lr)


def test_the_data_gives_the_model_its_class_count_through_the_clis_link_and_a_model_without_it_ignores_it():
    """TinyCLI links data.num_classes to model.num_classes (LightningCLI's link_arguments): the data's 3 over the
    model's default 5; a DataModule without `num_classes` leaves the model's own default."""
    short = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]
    assert run("fit", "--model", f"{__name__}.FiveClassesByDefault", *short).model.hparams.num_classes == 3
    boring = [f"--{group}=lightning.pytorch.demos.boring_classes.Boring{kind}" for group, kind in
              (("model", "Model"), ("data", "DataModule"))] + ["--best_checkpoint.monitor=null"]  # fmt: skip
    assert run("fit", *boring, "--early_stopping=null", *short).trainer.global_step == 2
