"""engine/threads.py and ``--threads``: each job runs with its thread policy, restored after (issue 33).

The counts are read with ``torch.get_num_threads()`` inside the job; nothing here is timed (the
speed is results/benchmarks/jobs.md, ``python -m engine bench jobs``).
"""

from __future__ import annotations

import argparse
import json
import threading

import pytest
import torch

import engine.cli as cli
from engine.threads import AUTO, JOB_THREADS, ThreadsError, job_threads, parse_threads, threads_for


@pytest.fixture(autouse=True)
def _two_threads_around_each_test():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_parse_threads_takes_auto_and_whole_numbers_and_names_the_flag_otherwise():
    assert parse_threads("auto") == AUTO and parse_threads(" AUTO ") == AUTO
    assert parse_threads("3") == 3 and parse_threads(1) == 1
    for bad in ("0", "-1", "1.5", "two", "", "100000"):
        with pytest.raises(
            ThreadsError, match=r"^--threads .*whole number of threads from 1 to 1024.*or auto"
        ):
            parse_threads(bad)
    with pytest.raises(ThreadsError, match="^Threads preference x:"):
        parse_threads("x", flag="Threads preference")


def test_auto_is_the_measured_choice_per_job_and_a_number_wins():
    assert threads_for("car train") == JOB_THREADS["car train"] == 1
    assert threads_for("a job nobody listed") == 1 and threads_for(None, None) == 1
    assert threads_for("car train", 3) == 3 and threads_for("car train", "2") == 2


def test_job_threads_sets_the_count_for_the_body_and_restores_it_also_after_an_error():
    with job_threads(1, job="car plan") as n:
        assert n == 1 and torch.get_num_threads() == 1
        with job_threads(3):
            assert torch.get_num_threads() == 3
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    with pytest.raises(RuntimeError), job_threads("auto", job="car train"):
        assert torch.get_num_threads() == 1
        raise RuntimeError("the job failed")
    assert torch.get_num_threads() == 2


def test_a_job_that_sets_its_own_count_is_undone_at_the_end():
    with job_threads(3):
        torch.set_num_threads(1)        # as the trainer does with TrainConfig.threads
    assert torch.get_num_threads() == 2


def test_as_a_decorator_each_call_is_independent():
    @job_threads(1)
    def job():
        return torch.get_num_threads()

    assert job() == 1 and job() == 1 and torch.get_num_threads() == 2


def test_a_job_on_another_thread_leaves_this_threads_count_alone():
    inside, entered, release = [], threading.Event(), threading.Event()

    def worker():
        with job_threads(1):
            inside.append(torch.get_num_threads())
            entered.set()
            release.wait(10)
            inside.append(torch.get_num_threads())

    t = threading.Thread(target=worker)
    t.start()
    entered.wait(10)
    assert torch.get_num_threads() == 2       # the job's count is the worker's own
    release.set()
    t.join(10)
    assert inside == [1, 1] and torch.get_num_threads() == 2


# -- the command line ---------------------------------------------------------------------------

def _leaves(parser, path=()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, child in subs[0].choices.items():
        yield from _leaves(child, (*path, name))


def _options(parser):
    return {o for a in parser._actions for o in a.option_strings}


def _threaded_commands():
    return [(path, p) for path, p in _leaves(cli.build_parser()) if p.get_default("threads_job") is not None]


def test_every_computing_command_has_threads():
    threaded = {" ".join(path) for path, _ in _threaded_commands()}
    for path, parser in _leaves(cli.build_parser()):
        job = " ".join(path)
        if "--device" in _options(parser) or job in JOB_THREADS:
            assert "--threads" in _options(parser), job
            # its own --threads: what that benchmark measures (bench rbd, car, ik)
            assert job in threaded or job.startswith("bench "), job
    assert set(JOB_THREADS) <= threaded
    assert "robot list" not in threaded and "logs inspect" not in threaded


def _required_argv(parser) -> list[str]:
    argv = []
    for action in parser._actions:
        if not (action.required or (not action.option_strings and action.nargs not in ("?", "*"))):
            continue
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        value = (
            str(list(action.choices)[0])
            if action.choices
            else ("1" if action.type not in (None, str) else "x")
        )
        count = action.nargs if isinstance(action.nargs, int) else 1
        argv += ([action.option_strings[-1]] if action.option_strings else []) + [value] * count
    return argv


def test_threads_reaches_every_command_and_is_restored_after(monkeypatch, capsys):
    seen = {}
    real = cli.build_parser

    def recording_parser():
        parser = real()
        for path, leaf in _leaves(parser):
            leaf.set_defaults(func=lambda args, path=path: seen.setdefault(path, []).append(
                (args.threads, torch.get_num_threads())) or 0)
        return parser

    monkeypatch.setattr(cli, "build_parser", recording_parser)
    commands = _threaded_commands()
    assert len(commands) >= 15
    for path, parser in commands:
        for flag in (["--threads", "3"], ["--threads", "auto"], []):
            assert cli.main([*path, *_required_argv(parser), *flag]) == 0, capsys.readouterr().err
            assert torch.get_num_threads() == 2
    expected = {path: [(3, 3), (AUTO, threads_for(" ".join(path))), (AUTO, threads_for(" ".join(path)))]
                for path, _ in commands}
    assert seen == expected


@pytest.mark.parametrize("value", ["0", "x", "1.5", "-2"])
def test_a_bad_threads_value_is_one_line_and_exit_2_before_any_work(value, monkeypatch, capsys):
    started = []
    real = cli.build_parser

    def parser_that_records_work():
        parser = real()
        for _, leaf in _leaves(parser):
            leaf.set_defaults(func=lambda args: started.append(args) or 0)
        return parser

    monkeypatch.setattr(cli, "build_parser", parser_that_records_work)
    assert cli.main(["car", "plan", "--threads", value]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert f"--threads: {value}: give a whole number of threads" in lines[0]
    assert started == []


def test_a_real_command_computes_with_the_chosen_threads(monkeypatch, capsys):
    from engine.robots import ik

    seen = []
    real_solve = ik.solve_ik

    def solve_ik(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return real_solve(*args, **kwargs)

    monkeypatch.setattr(ik, "solve_ik", solve_ik)
    target = ["--target", "0.4", "0.1", "0.5", "--json"]
    assert cli.main(["robot", "ik", "panda", "--link", "panda_link8", *target, "--threads", "3"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["link"] == "panda_link8"
    assert cli.main(["robot", "ik", "panda", "--link", "panda_link8", *target]) in (0, 1)
    capsys.readouterr()
    assert seen == [3, 1] and torch.get_num_threads() == 2


# -- bench jobs (the measurement itself is not run here: it takes minutes) -------------------------

def test_bench_jobs_names_an_unknown_job_in_one_line(capsys):
    assert cli.main(["bench", "jobs", "--jobs", "car plan,car fly", "--no-heartbeat"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--jobs car fly: not a job here" in err[0] and "car plan" in err[0]


def test_bench_jobs_table_shows_times_ratios_and_runs_past_the_timeout():
    from engine.job_bench import JOBS, markdown_table

    assert set(JOBS) <= set(JOB_THREADS)      # every benchmarked job has a measured policy
    row = {"job": "car train", "old_idle": 20.0, "old_loaded": None, "old_ratio": None,
           "new_idle": 16.0, "new_loaded": 18.0, "new_ratio": 18.0 / 16.0}
    beat = {"p50_ms": 0.5, "p99_ms": 12.25, "max_ms": 30.0}
    table = markdown_table(
        {
            "timeout": 150.0,
            "old_threads": 2,
            "rows": [row],
            "heartbeat": {"old_idle": beat, "old_loaded": None, "new_idle": beat, "new_loaded": beat},
        }
    )
    assert "| `car train` | 20.0 | >150 | - | 16.0 | 18.0 | 1.12x | 0.80x |" in table
    assert "| new | 0.5 | 12.2 | 0.5 | 12.2 | 30.0 |" in table and "| old | 0.5 | 12.2 | - | - | - |" in table
