"""Presets: functions returning validated device parameters, every number with its unit and source.

"assumed" marks a number chosen by us (order of magnitude from the sources, not a measured value).

References
----------
[Lo23] H. Lo, W. Moy, H. Yu, S. Sapatnekar, C. H. Kim, "An Ising solver chip based on coupled ring
       oscillators with a 48-node all-to-all connected array architecture", Nature Electronics 6, 771 (2023):
       65 nm CMOS, 1.2 V supply.
[Ahm21] I. Ahmed, P.-W. Chiu, W. Moy, C. H. Kim, "A probabilistic compute fabric based on coupled ring
       oscillators for solving combinatorial optimization problems", IEEE JSSC 56, 2870 (2021): 560 rings, 65 nm.
[Moy22] W. Moy et al., "A 1,968-node coupled ring oscillator circuit for combinatorial optimization problem
       solving", Nature Electronics 5, 310 (2022).
[IHP]  IHP SG13G2 open PDK (github.com/IHP-GmbH/IHP-Open-PDK), mismatch: A_VT = 3.9 mV·µm (LV NMOS).
[vdZ]  A. van der Ziel, "Noise in Solid State Devices and Circuits" (1986): γ = 2/3 (long channel).
[ST09] A. Slavin, V. Tiberkevich, IEEE Trans. Magn. 45, 1875 (2009).
[Tor17] J. Torrejon et al., "Neuromorphic computing with nanoscale spintronic oscillators", Nature 547, 428 (2017).
[Rom18] M. Romera et al., "Vowel recognition with four coupled spin-torque nano-oscillators", Nature 563, 230 (2018).
"""

from __future__ import annotations

import math

from hw_models.params import (IdealOscillatorParams, ResistiveCoupler, RingOscillatorParams, STNOParams,
                              TransconductanceCoupler)

__all__ = ["cmos_65nm_ring", "cmos_65nm_coupler", "cmos_65nm_transconductor", "level1_180nm_ring", "vortex_stno",
           "ideal_oscillator", "PRESETS", "PRESET_SOURCES"]


def cmos_65nm_ring(n_stages: int = 5, **overrides) -> RingOscillatorParams:
    """A 65 nm-class inverter ring as a SPICE level-1 (square-law) circuit.

    ========================  ==============  =========================================================
    field                     value           source
    ========================  ==============  =========================================================
    vdd_v                     1.2 V           [Lo23] (65 nm, 1.2 V)
    vto_n_v / vto_p_v         0.40 / −0.40 V  assumed (standard-V_T 65 nm magnitude)
    kp_n / kp_p               300 / 120 µA/V² assumed (long-channel square-law fit; mobility ratio ≈ 2.5)
    lambda_n / lambda_p       0.1 / 0.1 1/V   assumed
    w_n / w_p                 0.3 / 0.6 µm    assumed (2:1 P/N sizing)
    l_n / l_p                 65 nm           node [Ahm21, Lo23]
    c_load_f                  20 fF           assumed (next gate + wiring + coupler; gives f₀ ≈ 2 GHz
                                              for 5 stages, the GHz range of [Ahm21, Moy22, Lo23])
    noise_gamma               2/3             [vdZ]
    a_vt_n / a_vt_p           3.9 mV·µm       [IHP] (130 nm open PDK LV NMOS; used for both types and
                                              as a conservative value for 65 nm: assumed)
    sigma_c_rel               0.01            assumed (1 % load spread)
    ========================  ==============  =========================================================
    """
    base = dict(
        n_stages=n_stages,
        vdd_v=1.2,
        vto_n_v=0.40,
        vto_p_v=-0.40,
        kp_n_a_per_v2=300e-6,
        kp_p_a_per_v2=120e-6,
        lambda_n_per_v=0.1,
        lambda_p_per_v=0.1,
        w_n_m=0.3e-6,
        l_n_m=65e-9,
        w_p_m=0.6e-6,
        l_p_m=65e-9,
        c_load_f=20e-15,
        noise_gamma=2.0 / 3.0,
        a_vt_n_v_m=3.9e-9,
        a_vt_p_v_m=3.9e-9,
        sigma_c_rel=0.01,
    )
    base.update(overrides)
    return RingOscillatorParams(**base)


def cmos_65nm_coupler(resistance_ohm: float = 20e3, sigma_rel: float = 0.05) -> ResistiveCoupler:
    """Resistive coupler for :func:`cmos_65nm_ring`: 20 kΩ (assumed), 5 % spread (assumed, poly resistor)."""
    return ResistiveCoupler(resistance_ohm=resistance_ohm, sigma_rel=sigma_rel)


def cmos_65nm_transconductor(gm_s: float = 50e-6, sign: int = 1, sigma_rel: float = 0.05,
                             g_out_s: float = 0.0) -> TransconductanceCoupler:
    """Unilateral OTA coupler for :func:`cmos_65nm_ring`.

    g_m = 50 µS (assumed: the conductance of the 20 kΩ resistive preset, so both couplers give a coupling of
    the same order); 5 % g_m spread (assumed, bias-current mismatch); output conductance 0 (assumed ideal
    current output; set ``g_out_s`` to model a finite r_out); g_m/I_D = 10 /V (assumed, moderate inversion).
    """
    return TransconductanceCoupler(gm_s=gm_s, sign=sign, sigma_rel=sigma_rel, g_out_s=g_out_s)


def level1_180nm_ring(n_stages: int = 5, **overrides) -> RingOscillatorParams:
    """The SPICE level-1 ring of issue 9's ngspice figures (two such rings, a resistor between node 0s).

    NMOS VTO 0.4 V, KP 200 µA/V²; PMOS VTO −0.4 V, KP 100 µA/V²; λ 0.05 /V; W 1 µm / 2 µm; L 0.18 µm;
    V_DD 1.2 V; 10 fF per node (all "assumed": a generic 180 nm-class level-1 card, not a PDK fit; the
    reference circuit of the macromodel-vs-ngspice comparison). Mismatch and noise as :func:`cmos_65nm_ring`.
    """
    base = dict(n_stages=n_stages, vdd_v=1.2, vto_n_v=0.4, vto_p_v=-0.4, kp_n_a_per_v2=200e-6,
                kp_p_a_per_v2=100e-6, lambda_n_per_v=0.05, lambda_p_per_v=0.05, w_n_m=1e-6, l_n_m=0.18e-6,
                w_p_m=2e-6, l_p_m=0.18e-6, c_load_f=10e-15, noise_gamma=2.0 / 3.0, a_vt_n_v_m=3.9e-9,
                a_vt_p_v_m=3.9e-9, sigma_c_rel=0.01)
    base.update(overrides)
    return RingOscillatorParams(**base)


def vortex_stno(**overrides) -> STNOParams:
    """A vortex spin-torque nano-oscillator (magnetic tunnel junction, FeB free layer) in the universal model.

    ========================  ==============  =========================================================
    field                     value           source
    ========================  ==============  =========================================================
    f0_hz                     300 MHz         [Tor17, Rom18] vortex gyrotropic mode, 0.3–0.4 GHz
                                              (exact value assumed)
    n_shift_hz (N/2π)         20 MHz          assumed (vortex frequency rises weakly with amplitude)
    gamma_g_per_s             2π·5 MHz        assumed (α_eff ≈ 0.015 times ω₀)
    q_nonlinear_damping       0               assumed
    supercriticality I/I_th   1.5             assumed
    energy_scale_j E₀         5e-18 J         assumed (gives a ~100 kHz thermal linewidth, the order
                                              reported for vortex STNOs [Tor17])
    temperature_k             300 K           assumed
    current_a                 6 mA            assumed (several mA dc bias [Rom18])
    resistance_ohm            40 Ω            assumed (MTJ of tens of Ω [Rom18])
    sigma_f0_rel              0.01            assumed (1 % ω₀ spread from diameter variation)
    sigma_n_rel, sigma_gamma  0.05            assumed
    ========================  ==============  =========================================================
    """
    base = dict(
        f0_hz=300e6,
        n_shift_hz=20e6,
        gamma_g_per_s=2 * math.pi * 5e6,
        q_nonlinear_damping=0.0,
        supercriticality=1.5,
        energy_scale_j=5e-18,
        temperature_k=300.0,
        current_a=6e-3,
        resistance_ohm=40.0,
        sigma_f0_rel=0.01,
        sigma_n_rel=0.05,
        sigma_gamma_rel=0.05,
    )
    base.update(overrides)
    return STNOParams(**base)


def ideal_oscillator(**overrides) -> IdealOscillatorParams:
    """Ideal Kuramoto oscillator: 1 GHz (assumed), D = 1e4 rad²/s (assumed: ≈ 1.6 kHz FWHM linewidth,
    −96 dBc/Hz at 1 MHz), 1 % frequency spread (assumed), pure-sine coupling, power 0 (not modelled)."""
    base = dict(f0_hz=1e9, diffusion_rad2_per_s=1e4, sigma_f_rel=0.01, power_w=0.0, harmonics=((1.0, 0.0),))
    base.update(overrides)
    return IdealOscillatorParams(**base)


PRESETS = {
    "ring": {"cmos_65nm": cmos_65nm_ring, "level1_180nm": level1_180nm_ring},
    "stno": {"vortex": vortex_stno},
    "ideal": {"default": ideal_oscillator},
}
"""Preset functions by device kind and name (for the CLI)."""

_A = "assumed"
PRESET_SOURCES = {
    ("ring", "cmos_65nm"): {
        "n_stages": _A, "vdd_v": "[Lo23] 65 nm, 1.2 V", "vto_n_v": _A + " (standard-V_T 65 nm magnitude)",
        "vto_p_v": _A, "kp_n_a_per_v2": _A + " (long-channel square-law fit)", "kp_p_a_per_v2": _A,
        "lambda_n_per_v": _A, "lambda_p_per_v": _A, "w_n_m": _A + " (2:1 P/N sizing)", "w_p_m": _A,
        "l_n_m": "node [Ahm21, Lo23]", "l_p_m": "node [Ahm21, Lo23]",
        "c_load_f": _A + " (gives f0 ~ 2 GHz for 5 stages, the GHz range of [Ahm21, Moy22, Lo23])",
        "noise_gamma": "[vdZ] long-channel 2/3", "a_vt_n_v_m": "[IHP] SG13G2 LV NMOS 3.9 mV um (used for 65 nm: assumed)",
        "a_vt_p_v_m": "[IHP] (used for PMOS: assumed)", "sigma_c_rel": _A + " (1 % load spread)",
        "temperature_k": _A + " (room temperature)",
    },
    ("ring", "level1_180nm"): {"*": "issue 9 reference level-1 card (assumed, not a PDK fit)"},
    ("stno", "vortex"): {
        "f0_hz": "[Tor17, Rom18] vortex gyrotropic mode 0.3-0.4 GHz (exact value assumed)",
        "n_shift_hz": _A, "gamma_g_per_s": _A + " (alpha_eff ~ 0.015 x omega0)", "q_nonlinear_damping": _A,
        "supercriticality": _A, "energy_scale_j": _A + " (~100 kHz thermal linewidth, the order of [Tor17])",
        "temperature_k": _A, "current_a": _A + " (several mA [Rom18])", "resistance_ohm": _A + " (tens of ohm MTJ [Rom18])",
        "sigma_f0_rel": _A, "sigma_n_rel": _A, "sigma_gamma_rel": _A,
    },
    ("ideal", "default"): {"f0_hz": _A, "diffusion_rad2_per_s": _A + " (~1.6 kHz FWHM)", "sigma_f_rel": _A,
                           "power_w": _A + " (0 = not modelled)", "harmonics": _A + " (pure sine)"},
    ("coupler", "cmos_65nm_resistive"): {"resistance_ohm": _A, "sigma_rel": _A + " (poly resistor)"},
    ("coupler", "cmos_65nm_transconductor"): {"gm_s": _A + " (1/20 kOhm)", "sigma_rel": _A, "g_out_s": _A,
                                              "gm_over_id_per_v": _A + " (moderate inversion)"},
}
"""Field -> citation or "assumed" for every preset (the references are in this module's docstring)."""
