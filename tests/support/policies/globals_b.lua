-- Reads the global globals_a.lua sets (tests/unit/test_policy.c).
return { format = function(n) return "X=" .. tostring(X) end }
