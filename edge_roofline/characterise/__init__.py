"""Characterisation: sweep a model over a device's operating points (latency distribution,
energy per inference, idle power), predict the points not measured from a few that were, and
report the Pareto front, energy-optimal points, energy-roofline fits and charts.

Pure Python (no rclpy). ``sweep`` measures, ``store`` keeps results in SQLite (resumable),
``plan`` picks the points, ``predict`` runs the governor's predictor on few samples,
``pareto``/``results`` analyse, ``charts`` and ``report`` render.
"""
