<?php
// Run once per input line by `php -F`: $argn is the line, $argi its number.
echo $argi, ":", strrev($argn), "\n";
