# Vendor compilers are tried by the first kernel they compile; a failure
# there names the source and shows the compiler's error.
set(CMAKE_VENDORCXX_COMPILER_WORKS 1 CACHE INTERNAL "")
