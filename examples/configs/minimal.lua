-- minimal.lua: the smallest useful vigil config.
--
-- Everything not named here keeps its default (see config/vigil.lua for the
-- full list with bounds). The agent may start `make` and `pytest` and
-- nothing else; no monitors are started with the engine.
--
--   vigild --config examples/configs/minimal.lua --stdio
return {
  monitor = {
    allowed_commands = { "make", "pytest" },
  },
}
