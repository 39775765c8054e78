"""What makes two runs the same run for `--ckpt_path best|last` (lightning_runs.folders.recipes), on plain configs: the
settings a config file gives count as given, a fit compares its whole recipe, an evaluation the training settings
it is given and not the data it is given."""

from pathlib import Path

from lightning_runs.folders.recipes import differences, keys_in_configs, recipe

SAVED = {  # a config.yaml as a fit saves it, cut down
    "seed_everything": 0,
    "trainer": {"max_epochs": 20, "devices": 4, "enable_progress_bar": False, "logger": {"init_args": {"version": 3}}},
    "model": {"lr": 0.003, "network": {"class_path": "nets.Small", "init_args": {"width": [8, 16]}}},
    "data": {"class_path": "tasks.Blobs", "init_args": {"batch_size": 64, "predict_path": None}},
    "ckpt_path": None,
}


def command(**changes) -> dict:
    config = {key: dict(value) if isinstance(value, dict) else value for key, value in SAVED.items()}
    for dotted, value in changes.items():
        group, key = dotted.split("__")
        config[group] = {**config[group], key: value}
    return config


def test_the_settings_a_config_file_gives_count_as_given(tmp_path):
    Path(tmp_path / "mine.yaml").write_text(
        "model:\n  lr: 0.003\ntrainer:\n  max_epochs: 20\ndata:\n  class_path: tasks.Blobs\n  init_args:\n"
        "    batch_size: 32\nseed_everything: 1\n"
    )
    args = ["fit", f"--config={tmp_path / 'mine.yaml'}", "--config", str(tmp_path / "missing.yaml")]
    assert keys_in_configs(args) == {
        "model.lr",
        "trainer.max_epochs",
        "data.class_path",
        "data.batch_size",
        "seed_everything",
    }


def test_a_fit_is_the_same_run_only_with_the_same_model_data_seed_and_training():
    saved = recipe(SAVED, "fit", set())
    # Where it runs, how it shows and which version or checkpoint it names do not tell runs apart.
    moved = command(trainer__devices=1, trainer__enable_progress_bar=True, trainer__logger={"init_args": {}})
    assert differences(recipe({**moved, "ckpt_path": "last"}, "fit", set()), saved) == []
    assert differences(recipe(command(model__lr=0.01), "fit", set()), saved) == ["model.lr 0.003, this command 0.01"]
    assert differences(recipe(command(trainer__max_epochs=50), "fit", set()), saved) == [
        "trainer.max_epochs 20, this command 50"
    ]


def test_an_evaluation_compares_the_training_it_is_given_and_not_the_data_it_is_given():
    evaluated = command(trainer__max_epochs=50, data__predict_path="new.npy")
    saved = recipe(SAVED, "predict", set())
    assert differences(recipe(evaluated, "predict", {"data.predict_path"}), saved) == []  # any length, other data
    given = {"trainer.max_epochs", "data.predict_path"}
    assert differences(recipe(evaluated, "predict", given), recipe(SAVED, "predict", given)) == [
        "trainer.max_epochs 20, this command 50"
    ]
    assert differences(recipe(command(model__lr=0.01), "test", set()), saved) == ["model.lr 0.003, this command 0.01"]
