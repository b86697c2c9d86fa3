<?php
return 'included from next to cwd.php';
