"""Scaling decisions: KEDA trigger semantics and the HPA algorithm, pure and clock-injected.

``control`` does no I/O, reads no clock and does no logging: it is given lag, replica counts
and ``now_s`` and returns decisions with CamelCase reason tokens.

* :mod:`pytest_lagscale.control.keda`: ``KafkaLagTrigger``, ``CpuTrigger``, ``Fallback``,
  ``ActivationLoop`` and the trigger registry ``TRIGGERS``;
* :mod:`pytest_lagscale.control.hpa`: proposals and ``HorizontalPodAutoscaler``;
* :mod:`pytest_lagscale.control.controller`: ``ScalingController`` (``poll`` / ``sync``);
* :mod:`pytest_lagscale.control.observation`: ``Observation``, the input of every step;
* :mod:`pytest_lagscale.control.policy`: the ``ScalingPolicy`` seam (``KedaHpaPolicy``,
  ``LagPerSlotPolicy``) and the policy registry ``POLICIES``.
"""
