-- Sets a global; globals_b.lua must not see it (tests/unit/test_policy.c).
X = 1
return { format = function(n) X = X + 1 return "X=" .. tostring(X) end }
