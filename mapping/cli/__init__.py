"""The chip subcommands of ``oscsim`` (entry points of the ``oscsim.commands`` group): ``compile``,
``simulate``, ``compare`` and ``export-spice``, one module each, with what they share in
:mod:`mapping.cli.common`. Each module imports only the standard library and :mod:`oscsim.cli` at module level,
so that building a parser is fast; a command imports the chip code when it runs.
"""
