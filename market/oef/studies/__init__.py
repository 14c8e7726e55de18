"""Reproduction studies shipped with the OEF plugin (TOML files; ``marketsim run oef``)."""
