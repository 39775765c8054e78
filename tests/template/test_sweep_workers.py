"""Many sweep workers on one study, on the storages Optuna recommends for them: a real PostgreSQL server that the
tests start (postgres_server.py) for workers on many machines, the journal file for workers on one."""

import optuna
import sqlalchemy


def test_the_tests_postgresql_is_a_real_server_that_optuna_keeps_a_study_in(postgres_url):
    with sqlalchemy.create_engine(postgres_url).connect() as connection:
        version = connection.execute(sqlalchemy.text("SHOW server_version")).scalar()
    assert int(version.split(".")[0]) >= 12, version
    study = optuna.create_study(storage=postgres_url, study_name="smoke")
    study.optimize(lambda trial: trial.suggest_float("x", 0, 1), n_trials=2)
    assert len(optuna.load_study(study_name="smoke", storage=postgres_url).trials) == 2
