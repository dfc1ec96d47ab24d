"""mapping: compile trained oscillator-attention models onto oscillator chips, run them, report fidelity and energy."""

__all__: list[str] = []
