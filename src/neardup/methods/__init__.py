"""The methods: one package each, registered with :mod:`neardup.methods.registry`.

A method package holds its config (:class:`~neardup.methods.base.MethodConfig`: settings with
defaults, limits and help), its versioned scheme, its sketching and its batch job as a plan of
stages (:mod:`neardup.core.plan`). Nothing outside the package names the method: the command
line, the engines, the indexes and the contract tests find it through the registry.
"""
