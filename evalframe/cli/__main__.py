from evalframe.cli import console

console()
