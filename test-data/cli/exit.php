<?php
echo "before\n";
exit(7);
