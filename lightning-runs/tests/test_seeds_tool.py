"""`python -m <package> seeds`: a recipe fitted and its best checkpoint tested once per seed, each seed the
initialisation and (`--data_seed`, `seed` by default) the DataModule's split; the spread of every test metric, beside
the scikit-learn baselines of the task it is told (`--baselines classification|regression`). A bad option is one line
and exit 2, before any training."""

import json
from pathlib import Path

import pytest
import torch
import yaml
from tiny_regression import regression_cli_main
from tiny_runs import refusal
from torch.utils.data import DataLoader, TensorDataset

from lightning_runs import main
from lightning_runs.tools.baselines import baselines
from lightning_runs.tools.seeds import evaluate_seeds
from tiny_tasks import cli_main

SHORT = ["--trainer.max_epochs=2"]


def saved_config(name: str, version: int) -> dict:
    return yaml.safe_load(Path(f"runs/{name}/version_{version}/config.yaml").read_text())


def test_a_classification_seeds_its_split_and_initialisation_beside_the_baselines_it_is_told(capsys):
    result = evaluate_seeds(cli_main, seeds=[0, 1], args=SHORT, name="classes", baselines="classification")
    rows = result["seeds"]
    assert [row["seed"] for row in rows] == [0, 1]
    assert all(row["test_loss"] > 0 and 0 < row["svc_acc"] <= 1 and 0 < row["test_acc"] <= 1 for row in rows)
    for version, seed in enumerate([0, 1]):  # what each fit ran with, as its run folder records it
        config = saved_config("classes", version)
        assert config["seed_everything"] == seed and config["data"]["init_args"]["seed"] == seed
    assert set(result["summary"]["test_loss"]) == {"mean", "median", "std"}
    assert {"test_loss", "test_acc", "svc_acc", "logistic_regression_acc", "best_val_loss"} <= set(result["summary"])
    assert json.loads(Path("runs/classes.json").read_text()) == json.loads(json.dumps(result))
    assert "seed | test_acc | test_loss | best_val_loss | epochs | fit_seconds | svc_acc" in capsys.readouterr().out


def test_a_regression_whose_data_seeds_nothing_keeps_its_split_with_data_seed_null(capsys):
    result = evaluate_seeds(regression_cli_main, seeds=[0, 1], args=SHORT, name="values", data_seed=None,
                            baselines="regression")  # fmt: skip
    rows = result["seeds"]
    assert [saved_config("values", version)["seed_everything"] for version in (0, 1)] == [0, 1]
    assert all(row["ridge_r2"] > 0.95 and 0 < row["ridge_mse"] < 0.1 for row in rows)
    assert rows[0]["ridge_mse"] == pytest.approx(rows[1]["ridge_mse"], rel=1e-5)  # the same split every seed
    assert rows[0]["test_loss"] != rows[1]["test_loss"], "another initialisation"


def test_a_split_parameter_the_data_lacks_is_one_line_before_training(capsys):
    line = refusal(capsys, lambda: main(regression_cli_main, "tiny_regression", ["seeds", "--name=refused"]))
    assert "--data.seed" in line and line.endswith("give --data_seed <the parameter that seeds its split>, or null")
    assert not Path("runs/refused").exists() and not Path("runs/refused.json").exists()


def test_a_module_whose_test_logs_nothing_says_there_is_no_test_score_to_spread(capsys):
    demos = "lightning.pytorch.demos.boring_classes"
    boring = [f"--model={demos}.BoringModel", f"--data={demos}.BoringDataModule"]
    boring += ["--early_stopping=null", "--best_checkpoint.monitor=null"]
    result = evaluate_seeds(cli_main, seeds=[0], args=[*SHORT, *boring], data_seed=None)
    assert not any(key.startswith("test") for key in result["seeds"][0])
    assert "the model's test logged no metric (or it has no test_step)" in capsys.readouterr().out


def loaders(inputs: torch.Tensor, targets: torch.Tensor | None = None) -> tuple[DataLoader, DataLoader]:
    data = TensorDataset(inputs) if targets is None else TensorDataset(inputs, targets)
    return DataLoader(data, batch_size=16), DataLoader(data, batch_size=16)


def test_the_baselines_are_the_task_told_and_apply_only_to_tensor_pairs():
    points = torch.randn(64, 3, generator=torch.Generator().manual_seed(0))
    assert set(baselines("classification", *loaders(points, (points[:, 0] > 0).long()))) == {
        "svc_acc", "logistic_regression_acc"}  # fmt: skip
    assert set(baselines("regression", *loaders(points, points[:, :1] * 2))) == {"ridge_mse", "ridge_mae", "ridge_r2"}
    with pytest.raises(Exception, match=r"not \(inputs, targets, \.\.\.\) tensors"):
        baselines("regression", *loaders(points))


@pytest.mark.parametrize(
    "args,said",
    [
        (["--configs=[missing.yaml]"], "missing.yaml"),
        (["--seeds=[0, one]"], "--seeds"),
        (["--seeds=[3, 1, 3]"], "error: --seeds [3, 1, 3]: give each seed once"),
        (["--baselines=trees"], "--baselines"),
        (
            ["--args=[--trainer.max_epoch=1]"],
            "error: unknown option --trainer.max_epoch: did you mean --trainer.max_epochs?",
        ),
        (["--trainer.max_epoch", "1"], "error: unknown option --trainer.max_epoch: did you mean --trainer.max_epochs?"),
    ],
    ids=["missing_config", "seed_not_an_int", "seed_twice", "unknown_baselines", "misspelt_fit_option", "unwrapped"],
)  # fmt: skip
def test_a_bad_option_is_one_line_and_exit_2_before_any_training(capsys, args, said):
    line = refusal(capsys, lambda: main(cli_main, "tiny_tasks", ["seeds", *args]))
    assert said in line
    assert not Path("runs").exists(), "nothing trained, no run folder"
