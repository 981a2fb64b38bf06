"""Reading the kernels' assembly: ``cfg`` (AT&T text -> functions -> basic blocks -> loops)
and ``regions`` (the loops the generator emitted, recognised by what they do).

It sits beside ``listing`` (which produces the text) so both the bench (the instruction-mix
bound counts the stitched loop) and ``predict`` (llvm-mca on the same loops) stand on it.
"""
