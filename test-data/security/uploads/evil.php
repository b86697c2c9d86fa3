<?php
// Stands for a script an attacker managed to upload: must never run (nor be shown) when
// uploads/ is a no-PHP directory.
echo "EXECUTED uploads/evil.php";
