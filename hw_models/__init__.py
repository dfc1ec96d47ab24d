"""hw_models: device physics (CMOS ring oscillators, spin-torque oscillators, ideal phase oscillators)."""

__all__: list[str] = []
