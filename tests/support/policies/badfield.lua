-- A policy whose route is not a function.
return { format = function(n) return "x" end, route = "idle" }
