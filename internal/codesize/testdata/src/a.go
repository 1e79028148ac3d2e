package a

type T struct{}

func short() {}

func (t *T) three() {
	_ = t
}

func init() {
	_ = 1
	_ = 2
}
