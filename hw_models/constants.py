"""Physical constants (SI). Source: CODATA 2018 exact values (SI redefinition, 2019)."""

K_B = 1.380649e-23
"""Boltzmann constant [J/K] (CODATA 2018, exact)."""

Q_E = 1.602176634e-19
"""Elementary charge [C] (CODATA 2018, exact)."""

T_ROOM_K = 300.0
"""Room temperature [K] (assumed operating point)."""

T_SPICE_NOM_K = 300.15
"""SPICE nominal temperature TNOM = 27 degC [K] (ngspice manual, `.options tnom` default)."""
