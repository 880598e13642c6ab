"""Parse and validate the committed YAML into frozen dataclasses (config errors all at once).

* :func:`~pytest_lagscale.config.scaledobject.load_scaled_object`: KEDA ScaledObject;
* :func:`~pytest_lagscale.config.deployment.load_deployment`: consumer Deployment + replica flags;
* :func:`~pytest_lagscale.config.hpa.load_cpu_hpa`: CPU HPA (experiment 1);
* :func:`~pytest_lagscale.config.manifests.load_manifests`: all of them, checked across files;
* :mod:`~pytest_lagscale.config.harness`: harness-only ``lagscale.dev/*`` annotations.
"""
