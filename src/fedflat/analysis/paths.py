"""Per-run analysis file names (results/runs/<run>/<name>), shared by the rules and the kinds."""
HESSIAN = "hessian.json"
LANDSCAPE = {1: "landscape_1d.npz", 2: "landscape_2d.npz"}
STABILITY = "stability.json"
