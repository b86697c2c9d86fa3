<?php
echo 'Hello, World!';
