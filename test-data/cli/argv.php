<?php
// Prints what the CLI conventions give a script: $argc, $argv and $_SERVER['argv'].
echo $argc, "\n";
foreach ($argv as $i => $a) {
    echo $i, ":", $a, "\n";
}
echo $_SERVER['argc'], " ", count($_SERVER['argv']), "\n";
