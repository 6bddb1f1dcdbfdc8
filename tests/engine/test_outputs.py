"""Outputs under faults (issue 34): a full disk, two writers into one run folder, output paths
checked before the work, an edited run folder, the internal-error note."""

from __future__ import annotations

import errno
import json
import logging
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import engine.runs
from engine.cli import internal_error_note, main
from engine.data.replay_video import VideoWriteError, write_frames
from engine.io import DiskFullError, atomic_write_bytes, output_mode, save_checkpoint
from engine.runs import Run, RunError, RunLock, RunLocked

ROOT = Path(__file__).resolve().parents[2]


def _frames(n=6, h=64, w=64):
    rng = np.random.default_rng(0)
    return [rng.integers(0, 255, (h, w, 3), dtype=np.uint8) for _ in range(n)]


def _fake_ffmpeg(tmp_path, monkeypatch, message: str, code: int) -> None:
    """An "ffmpeg" that reads its frames, writes a few bytes to the output, prints ``message``
    on stderr and exits with ``code`` (what ffmpeg does when the trailer does not fit)."""
    script = tmp_path / "fake-ffmpeg"
    script.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import sys
        sys.stdin.buffer.read()
        open(sys.argv[-1], "wb").write(b"partial")
        sys.stderr.write({message!r} + "\\n")
        sys.exit({code})
        """))
    script.chmod(0o755)
    import imageio_ffmpeg

    monkeypatch.setattr(imageio_ffmpeg, "get_ffmpeg_exe", lambda: str(script))


# ------------------------------------------------------------------ videos on a full disk
def test_a_video_whose_trailer_does_not_fit_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "out" / "r.mp4"
    target.parent.mkdir()
    target.write_bytes(b"the old, good video")
    _fake_ffmpeg(tmp_path, monkeypatch, "[out#0/mp4] Error writing trailer: No space left on device", 0)
    with pytest.raises(DiskFullError, match=r"^disk full: .* needed at .*out"):
        write_frames(target, _frames(), 10)
    assert target.read_bytes() == b"the old, good video"
    assert sorted(p.name for p in target.parent.iterdir()) == ["r.mp4"]      # the temporary file is gone


def test_an_encoder_failure_is_reported_with_its_reason(tmp_path, monkeypatch):
    target = tmp_path / "r.mp4"
    target.write_bytes(b"old")
    _fake_ffmpeg(tmp_path, monkeypatch, "Unknown encoder 'libx264'", 1)
    with pytest.raises(VideoWriteError, match="Unknown encoder 'libx264'"):
        write_frames(target, _frames(), 10)
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir() if p.suffix == ".mp4"] == [
        "r.mp4"
    ]


def test_a_video_gets_the_umask_mode_not_0600(tmp_path):
    old = os.umask(0o022)
    try:
        info = write_frames(tmp_path / "r.mp4", _frames(4), 10)
    finally:
        os.umask(old)
    assert info["frames"] == 4
    assert stat.S_IMODE((tmp_path / "r.mp4").stat().st_mode) == 0o644
    import imageio.v2 as iio

    assert iio.get_reader(tmp_path / "r.mp4").count_frames() == 4          # a real, readable MP4


def test_a_video_on_a_really_full_file_system(tmp_path):
    """A 300 kB tmpfs (needs root and mount; skipped otherwise)."""
    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        target = mount / "r.mp4"
        target.write_bytes(b"OLDVIDEO")
        rng = np.random.default_rng(1)
        noise = (rng.integers(0, 255, (240, 320, 3), dtype=np.uint8) for _ in range(40))   # will not fit
        with pytest.raises(DiskFullError, match="disk full"):
            write_frames(target, noise, 10)
        assert target.read_bytes() == b"OLDVIDEO" and [p.name for p in mount.iterdir()] == ["r.mp4"]
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_atomic_writes_turn_a_full_disk_into_a_plain_error(tmp_path, monkeypatch):
    (tmp_path / "a.bin").write_bytes(b"old")
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fdopen", lambda fd, mode: Full(real_fdopen(fd, mode)))
    with pytest.raises(DiskFullError, match=r"disk full: 2\.0 MB needed at .*a\.bin"):
        atomic_write_bytes(tmp_path / "a.bin", b"x" * 2_000_000)
    monkeypatch.undo()
    assert (tmp_path / "a.bin").read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["a.bin"]
    assert stat.S_IMODE(atomic_write_bytes(tmp_path / "b.bin", b"1").stat().st_mode) == output_mode()


# ------------------------------------------------------------------ a full disk during a run
def _run(path):
    return Run.create(path, "learn", {"train": {"epochs": 3}}, {"data": "x"})


def test_a_full_disk_at_a_checkpoint_marks_the_run_failed(tmp_path, monkeypatch):
    run = _run(tmp_path / "r")

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(engine.runs, "save_tensors", full)
    with pytest.raises(DiskFullError, match=r"disk full.*checkpoints"):
        with run.recording(lambda: "cancelled"):
            run.save_state(1, {"model": {"w": torch.zeros(3)}})
    info = json.loads((tmp_path / "r" / "run.json").read_text())
    assert info["status"] == "failed" and info["message"].startswith("disk full")
    assert not (tmp_path / "r" / ".run.lock").exists()          # the lock went with the run
    _run(tmp_path / "r2").end("cancelled", "x")                 # and the folder can be used again


def test_when_even_run_json_cannot_be_written_it_is_rewritten_in_place(tmp_path, monkeypatch):
    run = _run(tmp_path / "r")

    def full(path, obj):
        raise DiskFullError(path, 100)

    monkeypatch.setattr(engine.runs, "write_json", full)
    run.end("failed", "disk full: 1 MB needed at somewhere")
    info = json.loads((tmp_path / "r" / "run.json").read_text())
    assert info["status"] == "failed" and info["message"] == "disk full: 1 MB needed at somewhere"


def test_a_full_disk_while_saving_a_checkpoint_names_the_folder(tmp_path, monkeypatch):
    import engine.io as io

    (tmp_path / "m").mkdir()
    real = io.write_json

    def full(path, obj):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(io, "write_json", full)
    with pytest.raises(DiskFullError) as err:
        save_checkpoint(tmp_path / "m", {"w": torch.zeros(1000)}, {"a": 1})
    monkeypatch.setattr(io, "write_json", real)
    assert str(err.value).startswith("disk full: ") and f"needed at {tmp_path / 'm'} " in str(err.value)
    assert err.value.needed >= 4000                           # the weights written before the JSON failed
    assert list((tmp_path / "m").iterdir()) == []


# ------------------------------------------------------------------ one writer per run folder
_HOLDER = """
import sys, time
from engine.runs import Run
run = Run.create(sys.argv[1], "learn", {"train": {}}, {})
print("holding", flush=True)
time.sleep(120)
"""


def _holder(folder):
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(folder)], stdout=subprocess.PIPE, text=True,
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout.readline().strip() == "holding"
    return proc


def test_a_second_run_into_a_folder_is_refused_until_the_first_dies(tmp_path, caplog, capsys):
    folder = tmp_path / "run"
    proc = _holder(folder)
    try:
        with pytest.raises(RunLocked) as err:
            _run(folder)
        message = str(err.value)
        assert f"process {proc.pid} on " in message and "another run is writing into this folder" in message
        assert "-c" in message and "started 20" in message                 # its command and start time
        with pytest.raises(RunLocked):                                    # a resume is refused the same way
            Run.open(folder, "learn", write=True)
        assert Run.open(folder, "learn").info["status"] == "running"      # reading needs no lock
        RunLock(tmp_path / "elsewhere").check()
        with pytest.raises(RunLocked):                                    # the commands' check before work
            RunLock(folder).check()
        code = main(["learn", "train", "--epochs", "1", "--out", str(folder)])
        assert code == 2 and capsys.readouterr().err.startswith(f"error: {folder}: another run is writing")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert (folder / ".run.lock").exists()                                # kill -9 left the file ...
    with caplog.at_level(logging.WARNING, logger="engine.runs"):
        run = Run.open(folder, "learn", write=True)                       # ... but not the lock
    assert f"taking over the lock of process {proc.pid}" in caplog.text
    run.end("cancelled", "done with it")
    assert not (folder / ".run.lock").exists()


def test_two_runs_of_one_process_into_one_folder(tmp_path):
    first = _run(tmp_path / "r")
    with pytest.raises(RunLocked, match=f"process {os.getpid()} "):
        _run(tmp_path / "r")
    first.finish(lambda tmp: (tmp / "model.json").write_text("{}"), {"loss": 1.0})
    second = _run(tmp_path / "r")           # the folder holds a finished run: staged beside it, and locked
    assert second.staged and RunLock(tmp_path / "r").path.exists()
    second.end("cancelled", "x")


def test_a_lock_is_released_when_its_run_is_dropped(tmp_path):
    run = _run(tmp_path / "r")
    del run
    _run(tmp_path / "r").end("cancelled", "x")


# ------------------------------------------------------------------ an edited run folder
def test_a_run_whose_kind_was_edited_names_the_file_and_field(tmp_path):
    from engine.eigenmodes.storage import learn_into

    run = _run(tmp_path / "r")
    run.end("cancelled", "stopped")
    config = json.loads((tmp_path / "r" / "config.json").read_text())
    (tmp_path / "r" / "config.json").write_text(json.dumps({**config, "kind": "eigenmode"}))
    with pytest.raises(RunError) as err:
        learn_into(None, resume_dir=tmp_path / "r", epochs=10)
    assert str(err.value).startswith(f"{tmp_path / 'r' / 'config.json'}: field 'design' is missing")
    assert not (tmp_path / "r" / ".run.lock").exists()                   # the refused resume let it go


# ------------------------------------------------------------------ the command line
def test_output_flags_are_checked_before_the_work(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # the log does not exist: a check made after reading it would complain about the log instead
    assert main(["identify", "log", "missing.csv", "--mapping", "m.json", "--save-urdf", "out.txt"]) == 2
    assert (
        capsys.readouterr().err.strip() == 'error: --save-urdf: out.txt must end in ".urdf" (e.g. out.urdf)'
    )
    assert main(["learn", "data", "--trajectories", "2", "--out", "/dev/null"]) == 2
    assert "/dev/null is a device or a special file" in capsys.readouterr().err
    assert not Path("/dev/null.npz").exists()
    assert main(["learn", "data", "--trajectories", "2", "--out", "."]) == 2
    assert capsys.readouterr().err.strip() == "error: --out: . is a folder; give a file name (e.g. out.npz)"
    assert main(["logs", "replay", "missing.csv", "--robot", "panda", "--gif", "sub/"]) == 2
    assert "--gif: sub/ is a folder" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_full_standard_output_is_a_plain_error():
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "engine", "robot", "info", "panda"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    assert done.returncode == 2
    assert done.stderr.strip().startswith("error: disk full: could not write the output (standard output")
    assert len(done.stderr.strip().splitlines()) == 1
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr


def test_a_full_disk_at_save_urdf_is_a_user_error(tmp_path, monkeypatch, capsys):
    import engine.io as io
    from engine.robots.library import load_robot
    from engine.robots.urdf_export import save_urdf

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(io.tempfile, "mkstemp", full)
    with pytest.raises(DiskFullError, match=f"disk full: .* needed at {tmp_path / 'r.urdf'}"):
        save_urdf(load_robot("double_pendulum"), tmp_path / "r.urdf")
    assert list(tmp_path.iterdir()) == []


def test_the_internal_error_note_never_points_at_a_file_it_did_not_keep(tmp_path):
    assert internal_error_note(tmp_path / "engine-cli.log") == (
        f"the details are in {tmp_path / 'engine-cli.log'}; please report it with that file")
    note = internal_error_note(None)
    assert "no details were kept" in note and "that file" not in note and "-v" in note
