"""One evaluation path, and data declared, never defaulted into (cli/evaluation.py, cli/declared.py): test, validate,
predict and export rebuild a checkpoint's module as the run built it (its config.yaml, then the checkpoint's
hyperparameters, then what was typed), parsed once, the checkpoint read once; a module that brings its own loaders
(Lightning's BoringModel, its demo transformer) runs with no DataModule, and the default data is never fed to a module
chosen by class path. On the tiny tasks and Lightning's own demo classes (the transformer's WikiText2, a download,
replaced by random tokens)."""

import shutil
from pathlib import Path

import jsonargparse
import pytest
import torch
import yaml
from lightning.pytorch.demos.transformer import LightningTransformer
from tiny_runs import refusal, run
from torch.utils.data import DataLoader, TensorDataset

import lightning_runs.checkpoints.checkpoint_io as checkpoint_io
from lightning_runs import configs
from lightning_runs.errors import main
from lightning_runs.records.hparams import score_tags
from lightning_runs.tools import export
from lightning_runs.tools.runs import _counterpart
from tiny_tasks import TinyDataModule, cli_main

HERE = __name__
BORING = "--model=lightning.pytorch.demos.boring_classes.BoringModel"
UNWATCHED = ["--best_checkpoint.monitor=null", "--early_stopping=null"]  # modules that log no val/loss
SHORT = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2", "--trainer.limit_val_batches=2"]


class NoShape(TinyDataModule):
    """A DataModule as many are written: it names no `sample_shape` for the model's input_shape link."""

    def __init__(self, n: int = 256, features: int = 6, num_classes: int = 3, batch_size: int = 32, seed: int = 0):
        super().__init__(n=n, features=features, num_classes=num_classes, batch_size=batch_size, seed=seed)
        del self.sample_shape


class TinyTransformer(LightningTransformer):
    """Lightning's demo transformer, its WikiText2 download replaced by random tokens: it saves no hyperparameters."""

    def prepare_data(self) -> None:
        pass

    def train_dataloader(self) -> DataLoader:
        tokens = torch.randint(0, self.model.vocab_size, (8, 2, 12), generator=torch.Generator().manual_seed(0))
        return DataLoader(TensorDataset(tokens[:, 0], tokens[:, 1]), batch_size=4)


def exports(*args: str) -> Path:
    return main(lambda: export.main(cli_main, list(args)))


def best(name: str = "tiny") -> str:
    return f"runs/{name}/version_0/checkpoints/best.ckpt"


def counted(monkeypatch) -> dict:
    """The command's parses (jsonargparse parses nested groups with parse_args too: the outermost only) and its reads
    of a checkpoint file, counted as they happen."""
    counts, depth, parse, load = {"parses": 0, "reads": 0}, [0], jsonargparse.ArgumentParser.parse_args, torch.load

    def parse_args(*args, **kwargs):
        counts["parses"] += depth[0] == 0
        depth[0] += 1
        try:
            return parse(*args, **kwargs)
        finally:
            depth[0] -= 1

    def read(file, *args, **kwargs):
        counts["reads"] += str(file).endswith(".ckpt")  # not the exported file export loads back to check
        return load(file, *args, **kwargs)

    monkeypatch.setattr(jsonargparse.ArgumentParser, "parse_args", parse_args)
    monkeypatch.setattr(checkpoint_io.torch, "load", read)
    return counts


@pytest.mark.parametrize("subcommand", ["test", "validate", "predict", "export"])
def test_an_evaluation_parses_its_command_once_and_reads_its_checkpoint_once(finished, subcommand, monkeypatch, capsys):
    """Before: the command parsed twice (without, then with the run's config), then Lightning's merge of the
    checkpoint's hyperparameters over it, and the checkpoint read five times; export read it twice. Export parses its
    own options (--format, --output, --batch_size) apart: two parses. Each names its checkpoint and run in one line
    under --quiet (the `best` keyword's, and a loose checkpoint's: the test below)."""
    shutil.copytree(finished, "runs")  # a short fit (conftest's), one epoch
    step = torch.load(best(), weights_only=True)["global_step"]
    capsys.readouterr()
    counts = counted(monkeypatch)
    if subcommand == "export":
        exports(f"--ckpt_path={best()}", "--format=pt2")
    else:
        run(subcommand, f"--ckpt_path={best()}", "--quiet")
    assert counts == {"parses": 2 if subcommand == "export" else 1, "reads": 1}
    said = f"{subcommand}: {best()} (epoch 0, step {step}), of the run runs/tiny/version_0"
    out = capsys.readouterr().out
    assert out.startswith(said) if subcommand == "export" else said in out.splitlines()


def test_what_is_typed_wins_over_the_checkpoints_hyperparameters_which_win_over_the_runs_config(finished, capsys):
    """Lightning's own merge put a checkpoint's hyperparameters over what was typed (TRAPS): `--model.lr` was lost for
    a checkpoint outside any run."""
    shutil.copytree(finished, "runs")  # a short fit (conftest's), one epoch
    Path("loose.ckpt").write_bytes(Path(best()).read_bytes())
    assert run("test", "--ckpt_path=loose.ckpt", "--model.lr=0.3").model.hparams.lr == 0.3
    assert run("test", "--ckpt_path=loose.ckpt").model.hparams.lr == 0.05


def test_every_evaluation_names_its_checkpoint_and_run_in_one_line_under_quiet(finished, capsys):
    """test, validate, predict and export of a run's checkpoint by its path say the same line: the test above."""
    shutil.copytree(finished, "runs")  # a short fit (conftest's), one epoch
    step = torch.load(best(), weights_only=True)["global_step"]
    capsys.readouterr()
    run("test", "--ckpt_path=best", "--quiet")
    said = f"test: {best()} (epoch 0, step {step}), of the run runs/tiny/version_0"
    assert said in capsys.readouterr().out.splitlines()
    Path("loose.ckpt").write_bytes(Path(best()).read_bytes())
    run("test", "--ckpt_path=loose.ckpt", "--quiet")
    said = f"test: loose.ckpt (epoch 0, step {step}), outside any run; its results go in runs/tiny/version_1"
    assert said in capsys.readouterr().out.splitlines()


def test_a_link_target_given_by_hand_is_kept_in_the_runs_config_and_its_checkpoint_evaluates(capsys):
    """jsonargparse drops link targets from a dump: the run's config.yaml lost `input_shape [6]`, and test and predict
    of its own checkpoint were refused ("the weights do not fit"). Typed options of the run's own DataModule need no
    `--data <class>` again."""
    run("fit", *SHORT, f"--data={HERE}.NoShape", "--model.init_args.input_shape=[6]", "--name=shape")
    saved = yaml.safe_load(Path("runs/shape/version_0/config.yaml").read_text())
    assert saved["model"]["init_args"]["input_shape"] == [6]
    assert "num_classes" not in saved["model"]["init_args"], "a link target left to its link is left out, as before"
    tested = run("test", f"--ckpt_path={best('shape')}")
    assert tested.model.layer.in_features == 6 and "test/acc" in tested.trainer.callback_metrics
    predicted = run("predict", "--ckpt_path=best", "--name=shape", "--data.batch_size=5")  # the run's NoShape
    assert type(predicted.datamodule) is NoShape and predicted.datamodule.hparams.batch_size == 5
    assert len(Path("runs/shape/version_0/predictions.csv").read_text().splitlines()) == 1 + 32


def test_a_datamodule_that_names_no_shape_for_the_model_is_one_line_before_training(capsys):
    error = refusal(capsys, lambda: run("fit", *SHORT, f"--data={HERE}.NoShape"))
    assert error == (
        "error: NoShape names no sample_shape, which TinyClassifier's input_shape is taken from: give"
        " --model.init_args.input_shape, or a sample_shape attribute on the DataModule"
    )
    assert not Path("runs/tiny").exists() or not any(Path("runs/tiny").iterdir()), "no run folder left"


def test_a_shape_a_config_file_gives_is_declared_as_one_typed_is(tmp_path, capsys):
    """The parse holds what a config file gave, as what was typed: the link's target is the run's, no refusal."""
    config = tmp_path / "shape.yaml"
    config.write_text(yaml.safe_dump({"model": {"init_args": {"input_shape": [6]}}}))
    fitted = run("fit", *SHORT, f"--data={HERE}.NoShape", f"--config={config}")
    assert fitted.model.layer.in_features == 6 and fitted.trainer.global_step == 2


def test_a_shape_given_by_hand_is_declared_even_where_it_is_the_models_own_default(capsys):
    """As the refusal says: `--model.input_shape [4]` declares the shape, though (4,) is TinyClassifier's default."""
    data = [f"--data={HERE}.NoShape", "--data.features=4"]
    assert "names no sample_shape" in refusal(capsys, lambda: run("fit", *SHORT, *data))
    fitted = run("fit", *SHORT, *data, "--model.input_shape=[4]")
    assert fitted.model.layer.in_features == 4 and fitted.trainer.global_step == 2


@pytest.mark.parametrize("data", [[], ["--data=null"]], ids=["no --data", "--data null"])
def test_lightnings_boring_model_runs_on_its_own_loaders_with_no_datamodule(data, capsys):
    fitted = run("fit", BORING, *data, *UNWATCHED, *SHORT)
    assert fitted.datamodule is None and fitted.trainer.global_step == 2
    assert yaml.safe_load(Path("runs/tiny/version_0/config.yaml").read_text())["data"] is None
    tested = run("test", f"--ckpt_path={fitted.trainer.checkpoint_callback.best_model_path}")
    assert tested.datamodule is None and type(tested.model).__name__ == "BoringModel"


def test_a_chosen_module_without_loaders_is_never_fed_the_default_data(capsys):
    error = refusal(capsys, lambda: run("fit", "--model=export_tasks.Regressor", *UNWATCHED, *SHORT))
    assert error == (
        "error: Regressor has no train_dataloader and the command names no DataModule: give --data <class> (a"
        " LightningDataModule); the default data goes with the default model only"
    )
    assert run("fit", "--model=tiny_tasks.SlowTinyClassifier", *SHORT).datamodule is not None, "a subclass: its data"


def test_the_demo_transformer_fits_on_its_own_loader_and_exports_as_its_run_built_it(capsys):
    """It saves no hyperparameters: export rebuilt it from them alone (vocab_size 33278) and refused "not a checkpoint
    of" while test worked; now the run's config builds it, and the one line left is that it declares no example."""
    fitted = run("fit", f"--model={HERE}.TinyTransformer", "--model.vocab_size=50", *UNWATCHED, *SHORT)
    assert fitted.trainer.global_step == 2
    error = refusal(capsys, lambda: exports("--ckpt_path=runs/tiny/version_0/checkpoints/last.ckpt"))
    assert error.startswith("error: TinyTransformer has no example_input_array"), error


def test_a_validation_metric_watched_where_nothing_validates_is_said_before_the_first_step(capsys):
    error = refusal(capsys, lambda: run("fit", f"--model={HERE}.TinyTransformer", "--model.vocab_size=50", *SHORT))
    assert error.startswith("error: EarlyStopping monitors val/loss, a validation metric, but this fit validates")
    assert not list(Path("runs").rglob("*.ckpt")) and not list(Path("runs").rglob("events.*")), "no step was taken"


def test_a_run_whose_module_leaves_its_network_out_of_its_hyperparameters_exports(capsys):
    """Lightning's backbone example (`save_hyperparameters(ignore=["backbone"])`) as export_tasks.InjectedRegressor: the
    run's config holds the network its checkpoint was trained with."""
    network = ["--model.network=export_tasks.MLP", "--model.network.hidden=5"]
    fit = ["--model=export_tasks.InjectedRegressor", *network, "--data=export_tasks.Samples", *UNWATCHED, *SHORT]
    fitted = run("fit", *fit)
    path = exports("--ckpt_path=runs/tiny/version_0/checkpoints/last.ckpt", "--format=pt2")
    loaded = torch.export.load(path).module()
    samples = torch.randn(7, 3)
    torch.testing.assert_close(loaded(samples), fitted.model.eval()(samples))


@pytest.mark.parametrize(
    ("monitor", "test"),
    [("val/loss", "test/loss"), ("val_acc", "test_acc"), ("valid_loss", "test_loss"), ("value_loss", None)],
)
def test_a_test_metric_is_named_by_its_validation_prefix_alone(monitor, test):
    """`valid_loss` once became `testid_loss` (hparams and the runs table showed no test score)."""
    assert configs.test_metric(monitor) == test
    assert score_tags(monitor)[1:] == ([f"hp/{test.replace('/', '_')}"] if test else [])
    assert _counterpart(monitor) == (test or "test")
