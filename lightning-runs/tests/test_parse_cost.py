"""A command's parser keeps what it computed more than once for that command (its subcommand's defaults, its config's
dump: cli/help.py), and never past a change: a default set again, a config changed after it was dumped."""

from tiny_runs import run

from lightning_runs.private import subcommand_parser


def test_a_commands_kept_defaults_and_dump_follow_every_change():
    cli = run("fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=1", "--trainer.limit_val_batches=1")
    parser, config = subcommand_parser(cli.parser, "fit"), cli.config.fit
    parser.get_defaults(skip_validation=True).trainer.max_epochs = 5  # a copy: what is kept stays as it was
    assert parser.get_defaults(skip_validation=True).trainer.max_epochs == 3
    parser.set_defaults({"trainer.max_epochs": 4})
    assert parser.get_defaults(skip_validation=True).trainer.max_epochs == 4
    assert "max_epochs: 1\n" in parser.dump(config, skip_none=False)
    config.trainer.max_epochs = 7
    assert "max_epochs: 7\n" in parser.dump(config, skip_none=False)
    assert parser.dumped(config, skip_none=False)["trainer"]["max_epochs"] == 7
