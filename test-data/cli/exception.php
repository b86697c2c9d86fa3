<?php
echo "before\n";
throw new RuntimeException("boom from exception.php");
