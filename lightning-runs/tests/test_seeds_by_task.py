"""`python -m <package> seeds`: any config over several seeds, each seed the initialisation and, where the DataModule
takes one, the split; beside the scikit-learn baselines of its task where they apply, and a table saying so where
none do. A bad option is one line and exit 2, before any training."""

import json
from pathlib import Path

import pytest
import torch
import yaml
from tiny_regression import regression_cli_main
from torch.utils.data import DataLoader, TensorDataset

from lightning_runs.tools import baselines as baselines_module
from lightning_runs.tools import seeds
from lightning_runs.tools.baselines import baselines
from lightning_runs.tools.seeds import evaluate_seeds
from tiny_tasks import TinyDataModule, cli_main

SHORT = ["--trainer.max_epochs=2", "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]


def saved_config(name: str, version: int) -> dict:
    return yaml.safe_load(Path(f"runs/{name}/version_{version}/config.yaml").read_text())


def test_a_classification_seeds_its_split_and_initialisation_and_gets_the_classifier_baselines(capsys):
    result = evaluate_seeds(cli_main, seeds=[0, 1], args=SHORT, name="classes")
    rows = result["seeds"]
    assert [row["seed"] for row in rows] == [0, 1]
    assert all(row["test_loss"] > 0 and 0 < row["svc_acc"] <= 1 and row["logistic_regression_acc"] > 0 for row in rows)
    for version, seed in enumerate([0, 1]):  # what each fit ran with, as its run folder records it
        config = saved_config("classes", version)
        assert config["seed_everything"] == seed and config["data"]["init_args"]["seed"] == seed
    assert result["split_seed"] == "data.seed"
    scored = {"test_loss", "test_acc", "svc_acc", "logistic_regression_acc", "best_val_loss", "fit_seconds"}
    assert set(result["summary"]) == scored, "the model's own accuracy beside the baselines' (test_acc)"
    assert set(result["summary"]["test_loss"]) == {"mean", "median", "std"}
    assert json.loads(Path("runs/classes.json").read_text()) == json.loads(json.dumps(result))
    assert "seed | test_loss | test_acc | svc_acc | logistic_regression_acc | best_val_loss" in capsys.readouterr().out


def test_a_classifier_watched_on_its_loss_shows_its_own_test_accuracy_beside_the_baselines_accuracies(capsys):
    # It logs val_acc and val_loss: the run follows val_loss, and test_loss alone would stand beside svc_acc.
    args = [*SHORT, "--model=tiny_tasks.UnderscoreNames"]
    (row,) = evaluate_seeds(cli_main, seeds=[0], args=args, name="underscores")["seeds"]
    assert 0 < row["test_acc"] <= 1 and row["test_loss"] > 0 and "best_val_loss" in row
    assert "seed | test_loss | test_acc | svc_acc | logistic_regression_acc | best_val_loss" in capsys.readouterr().out


def test_a_module_with_no_validation_metric_tests_its_best_checkpoint_the_newest_and_reports_what_the_test_logged(
    capsys,
):
    result = evaluate_seeds(cli_main, seeds=[0, 1], args=[*SHORT, "--model=tiny_tasks.Unvalidated"], name="newest")
    rows = result["seeds"]
    assert [row["checkpoint"] for row in rows] == [f"runs/newest/version_{v}/checkpoints/best.ckpt" for v in (0, 1)]
    assert all(0 < row["test_acc"] <= 1 and row["test_loss"] > 0 and row["epochs"] == 2 for row in rows)
    assert not any(key.startswith("best_") for key in rows[0]), "no metric was monitored"
    assert Path("runs/newest.json").is_file()
    assert "seed | test_acc | test_loss | svc_acc | logistic_regression_acc | epochs" in capsys.readouterr().out


def test_a_module_that_logs_nothing_says_there_is_no_score_to_spread(capsys):
    boring = ["--model=lightning.pytorch.demos.boring_classes.BoringModel"]
    boring.append("--data=lightning.pytorch.demos.boring_classes.BoringDataModule")  # batches of inputs alone
    result = evaluate_seeds(cli_main, seeds=[0], args=[*SHORT, *boring], name="boring")
    assert set(result["seeds"][0]) == {"seed", "epochs", "fit_seconds", "checkpoint", "baselines"}
    out = capsys.readouterr().out
    assert "seed | epochs | fit_seconds" in out
    assert "the model's test logged no metric: the table has no score of it to spread" in out


def test_a_regression_whose_data_takes_no_seed_gets_a_ridge_baseline(capsys):
    # The DataModule has no `seed`: a --data.seed would be refused, and the fits would not run.
    result = evaluate_seeds(regression_cli_main, seeds=[0, 1], args=SHORT, name="values")
    rows = result["seeds"]
    assert [saved_config("values", version)["seed_everything"] for version in (0, 1)] == [0, 1]
    assert "seed" not in saved_config("values", 0)["data"]["init_args"]
    assert all(row["ridge_r2"] > 0.95 and row["ridge_mae"] > 0 and 0 < row["ridge_mse"] < 0.1 for row in rows)
    # The same split every seed: the baseline moves only by the rounding of another shuffled order.
    assert rows[0]["ridge_mse"] == pytest.approx(rows[1]["ridge_mse"], rel=1e-5)
    assert rows[0]["test_loss"] != rows[1]["test_loss"], "another initialisation"
    out = capsys.readouterr().out
    assert "seed | test_loss | ridge_mse | ridge_mae | ridge_r2 | best_val_loss" in out
    said = [line for line in out.splitlines() if "--data_seed" in line]
    assert said == [
        "Note: the DataModule takes no `seed` (--data_seed's default), so every seed keeps the config's split (it"
        " takes: n, features, batch_size); give --data_seed <the one that seeds it>, or --data_seed null to keep it"
        " so"
    ]


class SplitSeeded(TinyDataModule):
    """Names the seed of its split `split_seed`, as a wine classifier's DataModule did."""

    def __init__(
        self, n: int = 256, features: int = 4, num_classes: int = 3, batch_size: int = 32, split_seed: int = 0
    ):
        super().__init__(n=n, features=features, num_classes=num_classes, batch_size=batch_size, seed=split_seed)
        self.hparams.seed = split_seed  # saved are this class's arguments: what setup() reads is the base's


def test_a_split_seed_named_otherwise_is_said_with_the_option_that_would_vary_it(capsys):
    evaluate_seeds(cli_main, seeds=[1], args=[*SHORT, "--data=test_seeds_by_task.SplitSeeded"], name="kept")
    (said,) = [line for line in capsys.readouterr().out.splitlines() if "--data_seed" in line]
    assert said.endswith("(it takes: n, features, num_classes, batch_size, split_seed); give --data_seed split_seed"
                         " if that seeds it, or --data_seed null to keep it so")  # fmt: skip
    assert saved_config("kept", 0)["data"]["init_args"]["split_seed"] == 0, "the config's split, as said"
    result = evaluate_seeds(
        cli_main, seeds=[1], args=[*SHORT, "--data=test_seeds_by_task.SplitSeeded"], data_seed="split_seed"
    )
    assert (
        result["split_seed"] == "data.split_seed" and saved_config("seeds", 0)["data"]["init_args"]["split_seed"] == 1
    )


def test_the_split_is_kept_with_data_seed_null_and_a_parameter_the_data_lacks_is_refused_before_training(capsys):
    result = evaluate_seeds(cli_main, seeds=[0, 1], args=SHORT, name="kept", data_seed=None)
    assert result["split_seed"] is None
    assert [saved_config("kept", v)["data"]["init_args"]["seed"] for v in (0, 1)] == [0, 0], "the config's split"
    with pytest.raises(SystemExit) as exit_:
        seeds.main(regression_cli_main, ["--data_seed=split_seed", "--name=refused"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert "error: --data_seed split_seed: the DataModule takes no such parameter (it takes: n, features" in err
    assert not Path("runs/refused").exists() and not Path("runs/refused.json").exists()


def test_a_train_split_past_the_bound_gets_no_baseline_and_the_table_says_so(capsys, monkeypatch):
    monkeypatch.setattr(baselines_module, "MAX_SAMPLES", 100)  # the tiny task's train split has 192
    result = evaluate_seeds(cli_main, seeds=[0], args=SHORT, name="unbounded")
    (row,) = result["seeds"]
    assert row["baselines"] == "none: the train split is larger than 100 samples or 33554432 values (baselines.py)"
    assert not any(key.startswith(("svc", "logistic")) for key in row)
    out = capsys.readouterr().out
    assert "seed | test_loss | best_val_loss | epochs | fit_seconds" in out
    assert out.rstrip().endswith(f"baselines: {row['baselines']}")


def test_every_option_of_the_tool_says_what_it_is(capsys):
    with pytest.raises(SystemExit):
        seeds.main(cli_main, ["--help"])
    out = " ".join(capsys.readouterr().out.split())  # jsonargparse wraps the descriptions
    described = {
        "--configs": "the configs each fit stacks",
        "--seeds": "the seeds, one fit and one test each",
        "--args": "more `fit` options for every seed",
        "--name": "the runs' folder name",
        "--output": "the JSON file of the table",
        "--data_seed": "the DataModule's parameter that seeds its split, set to each seed, such as split_seed",
    }
    for option, description in described.items():
        assert description in out.split(f" {option} ", 1)[1].split("(type:")[0], f"{option}: no description"


def loaders(inputs: torch.Tensor, targets: torch.Tensor | None = None) -> tuple[DataLoader, DataLoader]:
    data = inputs if targets is None else TensorDataset(inputs, targets)
    return DataLoader(data, batch_size=16), DataLoader(data, batch_size=16)


def test_the_baselines_follow_the_targets_and_apply_only_to_tensor_batches():
    points = torch.randn(64, 3, generator=torch.Generator().manual_seed(0))
    assert set(baselines(*loaders(points, (points[:, 0] > 0).long()))) == {"svc_acc", "logistic_regression_acc"}
    assert set(baselines(*loaders(points, points[:, :1] * 2))) == {"ridge_mse", "ridge_mae", "ridge_r2"}  # (N, 1)
    assert baselines(*loaders(points)) == "the train batches are not (tensor inputs, tensor targets, ...)"
    assert baselines(*loaders(points, points[:, :2])).startswith("the targets are neither")  # two values a sample


def refusal(capsys, args: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        seeds.main(cli_main, args)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "Traceback" not in err, err[-2000:]
    (line,) = err.splitlines()
    return line


@pytest.mark.parametrize(
    "args,said",
    [
        (["--configs=[missing.yaml]"], "error: --configs missing.yaml: no such file; give a config file"),
        (["--seeds=[0, one]"], "error: --seeds: expected int, got one"),
        (["--output=afolder"], "error: --output afolder: a folder; give a file name, such as afolder/seeds.json"),
        (["--seeds=[-1]"], "error: --seeds: -1 is not a seed; each must be in 0..4294967295"),
        (["--seeds=[4294967296]"], "error: --seeds: 4294967296 is not a seed; each must be in 0..4294967295"),
        (["--seeds=[3, 1, 3]"], "error: --seeds: 3 given twice, which trains the same run twice; give each seed once"),
        (["--output=afile/x"], "error: --output afile/x: afile is a file; give a file in a folder you can write"),
        (
            ["--args=[--trainer.max_epoch=1]"],  # refused as the fit would refuse it, by the CLI's own parser
            "error: unknown option --trainer.max_epoch: did you mean --trainer.max_epochs?",
        ),
    ],
    ids=[
        "missing_config", "seed_not_an_int", "output_a_folder", "seed_negative", "seed_too_large", "seed_twice",
        "output_in_a_file", "misspelt_fit_option",
    ],
)  # fmt: skip
def test_a_bad_option_is_one_line_and_exit_2_before_any_training(capsys, args, said):
    Path("afolder").mkdir()
    Path("afile").write_text("notes\n")  # the table was written after every seed trained: a traceback at the end
    assert refusal(capsys, args) == said
    assert not Path("runs").exists(), "nothing trained, no run folder"
