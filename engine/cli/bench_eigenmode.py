"""`python -m engine bench eigenmode`: time the default eigenmode design (target: 500 epochs <= 60 s)."""

from __future__ import annotations

import time

from engine.cli._common import add_device_option, print_json


def _run(args) -> int:
    import torch

    from engine.eigenmodes.config import MAX_EPOCHS, DesignConfig
    from engine.eigenmodes.jobs import learn_summary
    from engine.eigenmodes.multipliers import monodromy
    from engine.eigenmodes.stabilise import StabilisingController
    from engine.eigenmodes.train import learn_mode
    from engine.validation import check_int

    check_int(None, "--epochs", args.epochs, 1, MAX_EPOCHS, hint="epochs to time, for example 500")
    runs: list[dict] = []
    results = {"threads": torch.get_num_threads(), "runs": runs}
    for dtype in args.dtypes:
        design = DesignConfig()
        design.train.epochs = args.epochs
        design.train.dtype = dtype
        design.train.device = args.device
        t0 = time.perf_counter()
        mode = learn_mode(design)
        wall = time.perf_counter() - t0
        row = {"dtype": dtype, "device": args.device, "epochs": args.epochs, "wall_seconds": wall,
               "ms_per_epoch": 1000 * mode.seconds / max(args.epochs, 1), **learn_summary(mode)}
        row["target_met"] = bool(mode.seconds * 500 / max(args.epochs, 1) <= 60.0)
        ctrl = StabilisingController.for_mode(mode)
        x0 = ctrl.orbit.state_at(torch.tensor(mode.period / 4, dtype=torch.float64))
        t0 = time.perf_counter()
        monodromy(ctrl.field, x0, mode.period, 500)
        row["monodromy_seconds"] = time.perf_counter() - t0
        runs.append(row)
        if not args.json:
            print(
                f"{dtype}: {args.epochs} epochs in {mode.seconds:.1f} s ({row['ms_per_epoch']:.1f} ms/epoch), "
                f"tip error {row['tip_error'] * 100:.2f} cm, monodromy {row['monodromy_seconds']:.2f} s"
            )
    if args.json:
        print_json(results)
    return 0


def register_bench(subparsers) -> None:
    p = subparsers.add_parser(
        "eigenmode", help="time learning the default eigenmode design (target: 500 epochs in <= 60 s)"
    )
    p.add_argument("--epochs", type=int, default=500)
    p.add_argument("--dtypes", nargs="+", choices=["float32", "float64"], default=["float64", "float32"])
    add_device_option(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_run)
