"""Scripts that produce the data and figures under results/ (run from the repository root).

Each is a module with a ``main(argv)`` entry point, run as ``python -m experiments.<name>``:

- ``long_term_sets``: the reproduction's long-term scores on freshly drawn sets (results/reproduction);
- ``paper_network_trial``: SyMo with the paper's exact 1-DOF network (results/reproduction);
- ``cuda_check``: the engine's computations on CUDA beside the CPU (results/cuda_check).
- ``large_robots``: time and peak memory of ``robot info`` on a 5000-link URDF chain and a
  10,000-body MJCF (results/large_robots).

They use only the engine's public API.
"""
