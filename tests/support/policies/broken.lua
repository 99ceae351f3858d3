-- A policy with a syntax error on line 3.
local M = {}
M x = 1
return M
