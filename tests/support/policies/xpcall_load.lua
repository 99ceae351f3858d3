-- A policy whose file loops at load time inside xpcall's message handler
-- (the escape of issue 7, point 1): loading it must fail on the budget.
xpcall(function() while true do end end, function(e) while true do end end)
return { format = function(n) return "never" end }
