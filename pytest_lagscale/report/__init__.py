"""Reports of a recorded run: benchmark JSON, baseline comparison, timeline PNG, summary.

Submodules import matplotlib and rich only inside the functions that draw.
"""
