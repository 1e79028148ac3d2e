package skipme

func long() {
	_ = 1
	_ = 2
	_ = 3
}
