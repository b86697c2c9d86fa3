#!/usr/bin/env php
<?php
// The main script's first line is a shebang, which php skips (Composer's and PHPUnit's
// launchers start so); printed, it would be the first line of output.
function twice(int $n): int
{
    return 2 * $n; // doubled
}

echo "argv: ", json_encode($argv), " ", twice(21), "\n";
