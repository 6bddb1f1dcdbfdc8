"""The RC car, end to end (Köhler et al.): driving data (:mod:`.data`, :mod:`.driving_logs`), the
learned car model (:mod:`.model`) and its training (:mod:`.training`), the planning interface
to the simulator and the learned model (:mod:`.dynamics`), costs, the 512-candidate line-search
optimiser, scenarios, tracks, receding-horizon MPC and the speed benchmark.

Layer rank 6: imports ground modules, systems, robots, logs, data, models and training only.
"""
