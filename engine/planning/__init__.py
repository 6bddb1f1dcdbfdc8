"""Car trajectory optimisation (Köhler et al.): data, learned-model interfaces, costs, the
512-candidate line-search optimiser, scenarios, tracks and receding-horizon MPC."""
